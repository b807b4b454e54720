package agents

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/probehq/probe/result"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/probehq/probe/lib/textline"
)

// prepare makes one item ready for the load, unmeasured: created (the
// create tool, if the spec has one), written, read. By version, one write
// and a read whose version is checked. Read back, two writes and a read
// that tells what the server keeps: both words (every write: each
// acknowledged word must be read back after the run) or the second alone
// (the last write: the word an item holds after the run must be of a
// write no acknowledged write began after).
func (l *Load) prepare(ctx context.Context, cs *mcp.ClientSession, it *item) error {
	at := it.project + "/" + it.name
	if t := l.spec.Tool(Create); t != nil {
		if _, err := l.call(ctx, cs, t, it, l.word(), ""); err != nil {
			return fmt.Errorf("creating item %s: %s", at, textline.Of(redirected(err).Error(), textline.Max))
		}
	}
	writes := 1
	if l.spec.Mode() == result.AgentReadBack {
		writes = 2
	}
	for n := range writes {
		a, err := l.write(ctx, cs, it)
		if _, bad := err.(*ErrTool); bad {
			return err
		}
		if err != nil {
			return fmt.Errorf("write %d of item %s before the load: %s", n+1, at, textline.Of(redirected(err).Error(), textline.Max))
		}
		it.acks = append(it.acks, a)
	}
	res, err := l.call(ctx, cs, l.spec.Tool(Read), it, "", "")
	if err != nil {
		return fmt.Errorf("reading item %s: %s", at, textline.Of(redirected(err).Error(), textline.Max))
	}
	if l.spec.Mode() == result.AgentByVersion {
		_, err := version(res, l.spec.Tool(Read))
		return err
	}
	return l.learnKeeps(it, l.readWords(text(res)))
}

// write calls the write tool for it with a new word: the acknowledgement,
// with the version when the spec names its path (else -1).
func (l *Load) write(ctx context.Context, cs *mcp.ClientSession, it *item) (ack, error) {
	t := l.spec.Tool(Write)
	a := ack{version: -1, word: l.word(), sent: time.Now()}
	res, err := l.call(ctx, cs, t, it, a.word, "")
	a.at = time.Now()
	if err == nil && t.Version != "" {
		a.version, err = version(res, t)
	}
	return a, err
}

// learnKeeps reads what the server keeps of an item from a read after its
// two writes; every item must show the same.
func (l *Load) learnKeeps(it *item, held map[string]bool) error {
	at := it.project + "/" + it.name
	first, second := it.acks[0].word, it.acks[1].word
	var keeps string
	switch {
	case held[first] && held[second]:
		keeps = result.AgentEveryWrite
	case held[second]:
		keeps = result.AgentLastWrite
	case held[first]:
		return fmt.Errorf("item %s before the load: after two acknowledged writes %s's result holds the first's word "+
			"and not the second's: the second write was lost", at, l.spec.Tool(Read).Name)
	default:
		return &ErrTool{fmt.Sprintf("read-back (no version path for the write and the read tool): after two writes "+
			"to item %s %s's result holds neither written word, so probe cannot tell a lost write; give the write and "+
			"the read tools a version (the JSON path of the item's version in their results), or a read tool whose "+
			"result holds the item's text", at, l.spec.Tool(Read).Name)}
	}
	switch {
	case l.keeps == "":
		l.keeps = keeps
	case keeps != l.keeps:
		first := l.items[0]
		return fmt.Errorf("item %s before the load: a read after two writes shows %s kept, item %s/%s showed %s kept: "+
			"probe cannot tell which writes must be read back", at, keeps, first.project, first.name, l.keeps)
	}
	return nil
}

// readWords are this run's words in a reply: every word is the prefix
// and wordCount letters, and no longer.
func (l *Load) readWords(reply string) map[string]bool {
	prefix := l.prefix()
	words := map[string]bool{}
	for rest := reply; ; {
		i := strings.Index(rest, prefix)
		if i < 0 {
			return words
		}
		rest = rest[i+len(prefix):]
		n := 0
		for n < len(rest) && n <= wordCount && 'a' <= rest[n] && rest[n] <= 'z' {
			n++
		}
		if n == wordCount {
			words[prefix+rest[:n]] = true
		}
		rest = rest[n:]
	}
}

// readBack checks an item by reading it: whether it is lost, and the word
// the freshness check may search (one read back; "" when none was).
func (l *Load) readBack(ctx context.Context, cs *mcp.ClientSession, it *item) (rep result.AgentLost, ok bool, word string, readBack int) {
	rep = result.AgentLost{Project: it.project, Item: it.name, Acked: len(it.acks) - 1, Unanswered: len(it.unanswered),
		Final: -1, Twice: twice(it.acks), ReadBack: true}
	res, err := l.call(ctx, cs, l.spec.Tool(Read), it, "", "")
	if err != nil {
		rep.ReadErr = textline.Of(redirected(err).Error(), 160)
		return rep, false, "", 0
	}
	held := l.readWords(text(res))
	switch l.keeps {
	case result.AgentEveryWrite:
		var last *ack
		for i, a := range it.acks {
			if !held[a.word] {
				rep.Unread++
				if len(rep.UnreadWords) < result.AgentShownItems {
					rep.UnreadWords = append(rep.UnreadWords, a.word)
				}
				continue
			}
			readBack++
			if last == nil || a.at.After(last.at) {
				last = &it.acks[i]
			}
		}
		if last != nil {
			word = last.word
		}
	default: // LastWrite
		// The word held is of an acknowledged write, or of one that
		// failed (it may have landed any time). An acknowledged write
		// sent after another's reply came is after it in any order the
		// server may have chosen: the item must hold its word, or a
		// later one.
		rep.NoWord, rep.Superseded = true, -1
		for _, a := range it.acks {
			if !held[a.word] {
				continue
			}
			after := 0
			for _, b := range it.acks {
				if b.sent.After(a.at) {
					after++
				}
			}
			if rep.Superseded < 0 || after < rep.Superseded {
				rep.NoWord, rep.Superseded, word = false, after, a.word
			}
			readBack = 1
		}
		for _, w := range it.unanswered {
			if held[w] {
				rep.NoWord, rep.Superseded, word = false, 0, w
			}
		}
		rep.Superseded = max(rep.Superseded, 0)
	}
	return rep, len(rep.Twice) == 0 && rep.Unread == 0 && rep.Superseded == 0 && !rep.NoWord, word, readBack
}

// twice are the versions acknowledged to two or more writes (none
// without versions).
func twice(acks []ack) []int64 {
	seen := map[int64]int{}
	var out []int64
	for _, a := range acks {
		if a.version < 0 {
			continue
		}
		if seen[a.version]++; seen[a.version] == 2 {
			out = append(out, a.version)
		}
	}
	slices.Sort(out)
	return out
}

// How says how the checks will tell a lost write: "by version", or "read
// back, every write kept" as the reads before the load showed.
func (l *Load) How() string { return result.AgentChecks{Mode: l.spec.Mode(), Keeps: l.keeps}.How() }
