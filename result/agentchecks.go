package result

import (
	"fmt"
	"strings"
	"time"
)

// AgentChecks are the findings after the run.
type AgentChecks struct {
	Mode        string        // AgentByVersion or AgentReadBack: how a lost write is told
	Keeps       string        // AgentReadBack: AgentEveryWrite or AgentLastWrite, what a read showed before the load
	Writes      int           // acknowledged writes checked
	Versions    int           // AgentByVersion: of them, checked by their versions
	ReadBack    int           // AgentReadBack: of them, whose word was read back
	Items       int           // contended items
	FailedCalls int64         // measured calls that failed, every outcome
	Failures    []string      // each failed call kind, one line: "search: 3 timeout"
	Lost        []AgentLost   // items whose writes do not add up
	Searched    int           // items whose last word was searched: none of a lost item's (see fresh)
	Stale       []AgentStale  // items whose last word the search did not find
	Fresh       time.Duration // the longest an item took to be found
	FreshWithin time.Duration
}

// The modes of the lost-write check.
const (
	AgentByVersion = "versions"  // the versions acknowledged add up to the version read back
	AgentReadBack  = "read-back" // the words of the acknowledged writes are read back
)

// What a read showed of an item after two writes, before the load.
const (
	AgentEveryWrite = "every write" // both words: each acknowledged word must be read back
	AgentLastWrite  = "the last write"
)

// AgentLost is an item whose acknowledged writes do not add up: by their
// versions, or by reading their words back.
type AgentLost struct {
	Project, Item string
	Base          int64   // its version before the run (probe's first write)
	Acked         int     // writes acknowledged after it
	Unanswered    int     // writes that failed: each may have landed or not
	Final         int64   // its version after the run; -1: it could not be read
	Twice         []int64 // versions acknowledged to two or more writes
	ReadErr       string  `json:",omitempty"`
	ReadBack      bool    // checked by reading its words back (Base and Final unused)
	// Unread (every write kept) are the acknowledged words not read back:
	// their count and the first few.
	Unread      int
	UnreadWords []string
	// Superseded (the last write kept): the item holds the word of a
	// write that was acknowledged before this many acknowledged writes
	// were sent, each of which it should have been replaced by.
	Superseded int
	NoWord     bool // the last write kept: the item holds no word of its writes
}

// Missing is how many acknowledged writes the final version lacks.
func (l AgentLost) Missing() int64 {
	if l.ReadBack || l.Final < 0 {
		return 0
	}
	return max(0, l.Base+int64(l.Acked)-l.Final)
}

// Extra is how far the final version is above every write sent, the
// unanswered ones included: versions no write made.
func (l AgentLost) Extra() int64 {
	if l.ReadBack || l.Final < 0 {
		return 0
	}
	return max(0, l.Final-l.Base-int64(l.Acked+l.Unanswered))
}

func (l AgentLost) String() string {
	at := l.Project + "/" + l.Item
	var parts []string
	if len(l.Twice) > 0 {
		vs := make([]string, min(len(l.Twice), maxShownVersions))
		for i := range vs {
			vs[i] = fmt.Sprint(l.Twice[i])
		}
		shown := strings.Join(vs, ", ")
		if more := len(l.Twice) - len(vs); more > 0 {
			shown += fmt.Sprintf(" and %d more", more)
		}
		parts = append(parts, "version "+shown+" acknowledged to two writes")
	}
	switch {
	case l.ReadErr != "" && l.ReadBack:
		parts = append(parts, "it could not be read back ("+l.ReadErr+")")
	case l.Final < 0 && !l.ReadBack:
		parts = append(parts, "its version could not be read ("+l.ReadErr+")")
	case l.Unread > 0:
		parts = append(parts, fmt.Sprintf("%d of %d acknowledged writes not read back (%s)", l.Unread, l.Acked+1,
			capped(l.UnreadWords, l.Unread, ", ", "")))
	case l.Superseded > 0:
		parts = append(parts, fmt.Sprintf("it holds the word of a write acknowledged before %s sent to it began (lost)",
			count(l.Superseded, "other acknowledged write")))
	case l.NoWord:
		parts = append(parts, fmt.Sprintf("it holds the word of none of its %d acknowledged writes", l.Acked+1))
	case l.Missing() > 0:
		parts = append(parts, fmt.Sprintf("%d writes acknowledged after version %d, final version %d (%d missing)", l.Acked, l.Base,
			l.Final, l.Missing()))
	case l.Extra() > 0:
		parts = append(parts, fmt.Sprintf("final version %d is above version %d and the %d writes sent after it (%d unanswered)", l.Final,
			l.Base, l.Acked+l.Unanswered, l.Unanswered))
	}
	return at + ": " + strings.Join(parts, "; ")
}

// AgentStale is an item the search did not find by its last word: the word of
// a write probe knows was stored (its version added up, or it was read
// back), never one that may have been lost.
type AgentStale struct {
	Project, Item, Word string
	Version             int64  // -1: read back, no version
	Err                 string `json:",omitempty"` // the last search's failure, if it failed
}

func (s AgentStale) String() string {
	of := "read back"
	if s.Version >= 0 {
		of = fmt.Sprintf("version %d", s.Version)
	}
	msg := fmt.Sprintf("%s/%s: the word %q (%s)", s.Project, s.Item, s.Word, of)
	if s.Err != "" {
		return msg + " could not be searched: " + s.Err
	}
	return msg + " was not found"
}

// Failed says whether a check failed.
func (c AgentChecks) Failed() bool { return c.FailedCalls > 0 || len(c.Lost) > 0 || len(c.Stale) > 0 }

// How says how lost writes were told: "by version" or "read back, every
// write kept".
func (c AgentChecks) How() string {
	if c.Mode == AgentReadBack {
		return "read back, " + c.Keeps + " kept"
	}
	return "by version"
}

// maxShownVersions is how many versions given twice an item's line shows.
const maxShownVersions = 5

// AgentShownItems is how many items a failure line names before "and N
// more: report.json".
const AgentShownItems = 3

// Lines are the failed checks, one line per kind (the exit error's); a
// kind's items are named up to AgentShownItems, report.json has them all.
func (c AgentChecks) Lines() []string {
	var out []string
	if c.FailedCalls > 0 {
		out = append(out, fmt.Sprintf("%d calls failed (%s)", c.FailedCalls, strings.Join(c.Failures, "; ")))
	}
	if n := len(c.Lost); n > 0 {
		names := make([]string, n)
		for i, l := range c.Lost {
			names[i] = l.String()
		}
		out = append(out, fmt.Sprintf("lost writes on %d of %d items (%s): %s", n, c.Items, c.How(),
			capped(names, n, "; ", ": report.json")))
	}
	if n := len(c.Stale); n > 0 {
		names := make([]string, n)
		for i, s := range c.Stale {
			names[i] = s.String()
		}
		left := ""
		if out := c.Items - c.Searched; out > 0 {
			left = fmt.Sprintf(" (%s left out: a lost write)", count(out, "item"))
		}
		out = append(out, fmt.Sprintf("search did not find the last word within %v on %d of %d items searched%s: %s",
			c.FreshWithin, n, c.Searched, left, capped(names, n, "; ", ": report.json")))
	}
	return out
}

// capped is the first AgentShownItems of shown (of total in all) joined
// with sep, then "… and N more" and where: "and 13 more: report.json".
func capped(shown []string, total int, sep, where string) string {
	out := shown[:min(len(shown), AgentShownItems)]
	s := strings.Join(out, sep)
	if more := total - len(out); more > 0 {
		s += fmt.Sprintf(" … and %d more%s", more, where)
	}
	return s
}

// count is "1 item", "3 items".
func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
