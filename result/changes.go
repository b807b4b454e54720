package result

import "time"

// Places a change is watched in.
const (
	PlacePage    = "page"
	PlaceSitemap = "sitemap"
	PlaceSearch  = "search"
)

// Change is one write and when it showed.
type Change struct {
	Path, Permalink, Token string
	Start                  time.Time
	Wrote                  time.Duration            // the write's round trip
	Visible                map[string]time.Duration // place → from Start until a reader saw it
	Lost                   []string                 // places it never showed within the timeout
	Err                    string                   // the write failed
}
