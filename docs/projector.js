// The "contents" button of a narrow window (below 1200 px, a projector's
// 1024 x 768): there extra.css folds the navigation tree away, and the
// button lays it over the page, or folds it away again.
(function () {
  if (!document.getElementById('side-nav')) return;
  var button = document.createElement('button');
  button.id = 'tree-toggle';
  button.type = 'button';
  button.textContent = '\u2630 contents';
  button.setAttribute('aria-expanded', 'false');
  button.addEventListener('click', function () {
    var shown = document.body.classList.toggle('tree-shown');
    button.setAttribute('aria-expanded', shown ? 'true' : 'false');
  });
  document.body.appendChild(button);
})();
