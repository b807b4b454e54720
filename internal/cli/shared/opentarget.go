package shared

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"
)

// ReadFileFlag reads --file (nil without it): its target and pprof URL
// stand in for --target and --pprof when those are not given.
func ReadFileFlag(ctx context.Context, t *TargetFlags, p *ProfileFlags) (*TargetFile, error) {
	if t.File == "" {
		return nil, nil
	}
	file, err := ReadTargetFile(ctx, t.File)
	if err != nil {
		return nil, err
	}
	if t.Target == "" && file.Target != "" {
		if _, err := ParseTarget(file.Target); err != nil {
			return nil, UsageError{Msg: fmt.Sprintf("--file %s: target: %v", t.File, err)}
		}
		t.Target = file.Target
	}
	if p.Pprof == "" {
		p.Pprof = file.Pprof
	}
	return file, nil
}

// answersHTTP1 says whether the server at addr answers an HTTP/1.1
// request (after it refused HTTP/2 with prior knowledge).
func answersHTTP1(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "HEAD / HTTP/1.1\r\nHost: "+addr+"\r\nConnection: close\r\n\r\n"); err != nil {
		return false
	}
	head := make([]byte, 7)
	_, err = io.ReadFull(conn, head)
	return err == nil && string(head) == "HTTP/1."
}

// insecureHint names --insecure when a TLS certificate did not verify.
func insecureHint(err error) string {
	var cv *tls.CertificateVerificationError
	if errors.As(err, &cv) || strings.Contains(err.Error(), "failed to verify certificate") {
		return " (--insecure accepts a certificate that does not verify)"
	}
	return ""
}

// OpenTarget parses --target, or starts the fixture as a child process;
// the headers of file (nil: none) go before --header's.
func OpenTarget(ctx context.Context, f *TargetFlags, file *TargetFile, stderr io.Writer) (*probes.Target, []result.Warning, func(), error) {
	header := f.Header()
	if file != nil {
		header = append(append(header[:0:0], file.Headers...), header...) // a new array: file's is kept
	}
	var warnings []result.Warning
	if f.Target != "" {
		u, err := ParseTarget(f.Target)
		if err != nil {
			return nil, nil, nil, err
		}
		if f.Pin {
			warnings = append(warnings, result.Warning{Kind: "not-pinned", Message: "--pin places only a fixture that probe starts"})
		}
		t := &probes.Target{URL: u, Header: header, HTTP2: f.HTTP2Of()}
		// An unreachable target is one line, not a run of failed requests.
		conn, err := net.DialTimeout("tcp", t.Addr(), 5*time.Second)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("target %s is unreachable: %v", u, err)
		}
		conn.Close()
		if err := probes.CheckHTTP2(t, 10*time.Second); err != nil {
			if u.Scheme == "http" && answersHTTP1(t.Addr()) {
				return nil, nil, nil, fmt.Errorf("target %s answers HTTP/1.1, not HTTP/2 with prior knowledge (h2c): "+
					"--http2 and gRPC need a server that speaks h2c", u)
			}
			return nil, nil, nil, fmt.Errorf("target %s does not answer over %s: %v%s", u, t.Protocol(), err, insecureHint(err))
		}
		return t, warnings, func() {}, nil
	}
	fmt.Fprintf(stderr, "probe: starting the fixture (%s mode, %d notes)…\n", f.FixtureMode, f.Notes)
	child, err := StartFixture(ctx, FixtureStart{Mode: f.FixtureMode, Notes: f.Notes, Synthetic: f.Synthetic, Key: f.Key})
	if err != nil {
		return nil, nil, nil, err
	}
	u, _ := ParseTarget(child.URL)
	if f.Pin {
		warnings = append(warnings, Pin(child)...)
	}
	t := &probes.Target{URL: u, Header: header, Child: child, HTTP2: f.HTTP2Of()}
	if err := probes.CheckHTTP2(t, 10*time.Second); err != nil {
		child.Stop()
		return nil, nil, nil, fmt.Errorf("the fixture does not answer over %s: %v", t.Protocol(), err)
	}
	return t, warnings, func() { child.Stop() }, nil
}

// Pin places the fixture probe started on a CPU of its own (--pin); a
// not-pinned warning says why it could not.
func Pin(child *target.Child) []result.Warning {
	ok, err := target.Pin(child.PID())
	switch {
	case err != nil:
		return []result.Warning{{Kind: "not-pinned", Message: "--pin: " + err.Error()}}
	case !ok:
		return []result.Warning{{Kind: "not-pinned", Message: "--pin needs two or more CPUs"}}
	}
	return nil
}

// OpenServer finds the process of tg and, when profile is not nil (profiles
// asked for), checks its pprof; without and withoutProfiles end the
// warnings of what the command goes without (target.Spec's).
func OpenServer(ctx context.Context, tg *probes.Target, profile *target.ProfileOptions, without, withoutProfiles string) *target.Target {
	spec := target.Spec{URL: tg.URL, Child: tg.Child, Without: without, WithoutProfiles: withoutProfiles}
	if profile != nil {
		spec.Pprof = profile.PprofURL
	}
	return target.Open(ctx, spec)
}
