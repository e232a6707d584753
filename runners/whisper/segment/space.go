package segment

import "unicode"

// isPySpace is Python's str.isspace for one character: Go's white space plus the
// separators U+001C..U+001F.
func isPySpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }
