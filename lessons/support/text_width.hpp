// How wide a line is on a terminal: what the lessons wrap by and what
// tests/check_lesson.cpp holds them to (90 columns).
#pragma once

#include <string>

namespace lesson {

// Display width of UTF-8 text: a column per character, two for a wide one
// (Chinese, and full-width punctuation such as '，'), as a terminal shows them.
inline int columns(const std::string& s) {
    int n = 0;
    for (std::size_t i = 0; i < s.size();) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        const int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        unsigned cp = len == 1 ? c : c & (0x3F >> (len - 1));
        for (int k = 1; k < len && i + k < s.size(); ++k) cp = cp << 6 | (s[i + k] & 0x3F);
        const bool wide = (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF) ||
                          (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) ||
                          (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
                          (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x20000 && cp <= 0x3FFFD);
        n += wide ? 2 : 1;
        i += len;
    }
    return n;
}

}  // namespace lesson
