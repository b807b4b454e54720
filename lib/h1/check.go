package h1

import (
	"fmt"
	"strings"
)

// What the client refuses to write: anything that would make its bytes
// more than the one request it means (RFC 9110 and 9112). A target under
// test is not trusted, and neither is a value taken from its replies: a CR
// LF in a header value would end the header there and let the rest be
// read as headers of the value's choosing or as a second request (request
// splitting); a space in the request target would end it early.

// RequestError is a request the client refused to write: nothing of it
// was sent.
type RequestError struct {
	Part   string // "method", "request target", "header name", "header X-Token", "host"
	Reason string // "holds a CR LF", "is not a token", …
}

func (e *RequestError) Error() string {
	return fmt.Sprintf("request not sent: its %s %s", e.Part, e.Reason)
}

// Check says why r cannot be written to host as one HTTP/1.1 request (what
// Conn.Do would refuse, with nothing sent), or nil.
func (r *Request) Check(host string) error {
	_, err := r.bytes(host)
	return err
}

// check is nil when r (to host) can be written as one HTTP/1.1 request.
func (r *Request) check(host string) error {
	if reason := CheckToken(r.Method); reason != "" {
		return &RequestError{Part: "method", Reason: reason}
	}
	if reason := CheckTarget(r.Path); reason != "" {
		return &RequestError{Part: "request target", Reason: reason}
	}
	if reason := CheckTarget(host); reason != "" {
		return &RequestError{Part: "host", Reason: reason}
	}
	for _, f := range r.Header {
		if reason := CheckToken(f.Name); reason != "" {
			return &RequestError{Part: "header name " + fmt.Sprintf("%q", f.Name), Reason: reason}
		}
		if reason := CheckFieldValue(f.Value); reason != "" {
			return &RequestError{Part: "header " + f.Name, Reason: reason}
		}
	}
	return nil
}

// CheckToken says why s is not a token (a method, a header name), or "".
func CheckToken(s string) string {
	if s == "" {
		return "is empty"
	}
	for i := 0; i < len(s); i++ {
		if !tchar[s[i]] {
			return "is not a token: " + describe(s[i])
		}
	}
	return ""
}

// CheckTarget says why s cannot be a request target, or "": a control
// character or a space would end the request line or the target early.
func CheckTarget(s string) string {
	if s == "" {
		return "is empty"
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f {
			return describeIn(s, i)
		}
	}
	return ""
}

// CheckFieldValue says why s cannot be a header's value, or "": CR or LF
// would end the line (what follows becomes a header or a request of its
// own), NUL is refused by servers and cuts C strings.
func CheckFieldValue(s string) string {
	if i := strings.IndexAny(s, "\r\n\x00"); i >= 0 {
		return describeIn(s, i)
	}
	return ""
}

// describeIn names the byte at s[i], a CR LF as one.
func describeIn(s string, i int) string {
	if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
		return "holds a CR LF"
	}
	return "holds " + describe(s[i])
}

func describe(c byte) string {
	switch c {
	case '\r':
		return "a CR"
	case '\n':
		return "an LF"
	case 0:
		return "a NUL"
	case ' ':
		return "a space"
	}
	if c < ' ' || c >= 0x7f {
		return fmt.Sprintf("the byte 0x%02x", c)
	}
	return fmt.Sprintf("%q", c)
}

// tchar is RFC 9110's tchar: "!#$%&'*+-.^_`|~", digits and letters.
var tchar = func() (t [256]bool) {
	for c := range 256 {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", byte(c)) >= 0
	}
	return t
}()
