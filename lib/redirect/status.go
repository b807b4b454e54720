package redirect

import "net/http"

// Status is a CheckRedirect for a client to which a 3xx is a reply like
// any other, as it is to the load engine (lib/h1 follows nothing): the
// redirect is not followed, and the client's Do returns the 3xx itself,
// its Location unread. The fuzzer's requests and the settle wait's timed
// GET use it.
func Status(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
