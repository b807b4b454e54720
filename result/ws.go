package result

import (
	"fmt"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/google/pprof/profile"
)

// WSCounts are the checks of one room, one round or the run.
type WSCounts struct {
	Expected   int64 `json:"expected"`
	Delivered  int64 `json:"delivered"`
	Missing    int64 `json:"missing"`
	Duplicated int64 `json:"duplicated"`
	Misrouted  int64 `json:"misrouted"`
	OutOfOrder int64 `json:"out_of_order"`
}

// Add adds o's counts to c's.
func (c *WSCounts) Add(o WSCounts) {
	c.Expected += o.Expected
	c.Delivered += o.Delivered
	c.Missing += o.Missing
	c.Duplicated += o.Duplicated
	c.Misrouted += o.Misrouted
	c.OutOfOrder += o.OutOfOrder
}

// WSRound is one round of events.
type WSRound struct {
	Round         int                     `json:"round"`
	Published     int                     `json:"published"`
	PublishErrors int                     `json:"publish_errors"`
	IdleBefore    time.Duration           `json:"idle_before_ns,omitempty"`
	Away          int                     `json:"away,omitempty"` // connections dropped during it
	Counts        WSCounts                `json:"counts"`
	Latency       *hdrhistogram.Histogram `json:"-"` // µs from publish to receipt
	CPU           *profile.Profile        `json:"-"`
	Wall          *profile.Profile        `json:"-"` // fgprof's, with Profile.FgprofURL
	Took          time.Duration           `json:"took_ns"`
	// ServerCPU is the target's CPU over the round (from /proc), and
	// Goroutines its goroutines as the round began (profiled; 0: unknown).
	ServerCPU  time.Duration `json:"server_cpu_ns"`
	Goroutines int           `json:"goroutines"`
}

// WS is what a WebSocket fan-out run (probe ws) measured.
type WS struct {
	Connections  int                     `json:"connections"`
	Rooms        int                     `json:"rooms"`
	Ready        time.Duration           `json:"ready_ns"` // from the first upgrade to the last connection ready
	ReadyCount   int                     `json:"ready"`
	Refused      int                     `json:"refused"` // upgrades that failed or never said ready (not cut short by Ctrl-C)
	FirstRefusal string                  `json:"first_refusal,omitempty"`
	Dropped      int                     `json:"dropped"`        // closed by probe on purpose (--drop)
	Reconnected  int                     `json:"reconnected"`    // of those, ready again
	Lost         int                     `json:"lost"`           // closed by the server or the network mid-run
	Replayed     int64                   `json:"replayed"`       // events of a round a connection was away for, received after it came back
	Garbage      int64                   `json:"garbage"`        // broken markers, messages over the read limit, invalid frames
	Unacked      int64                   `json:"unacknowledged"` // receipts of events whose publish failed (refused, timed out): not deliveries
	Other        int64                   `json:"other"`          // messages after ready without an event: the server's own (pings, notices) or noise
	Totals       WSCounts                `json:"totals"`
	PerRoom      []WSCounts              `json:"per_room"`
	Rounds       []*WSRound              `json:"rounds"`
	Latency      *hdrhistogram.Histogram `json:"-"`

	// ReconnectRefused are the upgrades of dropped connections (--drop)
	// that failed or never said ready again.
	ReconnectRefused int `json:"reconnect_refused,omitempty"`

	ServerRSSPeak int64         `json:"server_rss_peak_bytes"`
	ServerRSSIdle int64         `json:"server_rss_before_bytes"`
	ServerFDsPeak int           `json:"server_fds_peak"`
	OwnRSSPeak    int64         `json:"own_rss_peak_bytes"`
	OwnCPU        time.Duration `json:"own_cpu_ns"`
	ServerCPU     time.Duration `json:"server_cpu_ns"`
	// Timeline is the target about once a second (local targets).
	Timeline []WSSample `json:"timeline"`
	// Experiment is what the per-delivery experiment measured; nil when
	// it did not run.
	Experiment *WSExperiment `json:"experiment,omitempty"`

	Mutex, Block *profile.Profile  `json:"-"`
	Raw          map[string][]byte `json:"-"`
	PublishTime  time.Duration     `json:"publish_time_ns"` // the publish requests' time together
	Interrupted  bool              `json:"interrupted"`
	Warnings     []string          `json:"warnings"`

	RoomNames []string `json:"room_names,omitempty"` // the file's names of the rooms; nil: r0, r1, …
	// MainModule is the target's main module, from its goroutine profile's
	// main.main (profiled; "" unknown): which frames are its own code, when
	// its CPU profiles hold no main.main (a binary built by go install
	// has every file under the module cache).
	MainModule string `json:"main_module,omitempty"`
}

// Failed says whether an event was missing, delivered twice or to the
// wrong room.
func (r *WS) Failed() bool {
	return r.Totals.Missing > 0 || r.Totals.Duplicated > 0 || r.Totals.Misrouted > 0
}

// WSRoomName is the name of room i as probe sends it ({room}).
func WSRoomName(i int) string { return fmt.Sprintf("r%d", i) }

// RoomName is room i's name: the file's, or r0, r1, ….
func (r *WS) RoomName(i int) string {
	if i < len(r.RoomNames) {
		return r.RoomNames[i]
	}
	return WSRoomName(i)
}

// WSSample is the target at one moment of the run (the timeline).
type WSSample struct {
	AtS      float64 `json:"at_s"`      // since the connections started opening
	CPUCores float64 `json:"cpu_cores"` // the target's CPU since the sample before, in cores
	RSSBytes int64   `json:"rss_bytes"`
	FDs      int     `json:"fds"`
	Threads  int     `json:"threads"`
	// Goroutines is the target's count from /debug/pprof/goroutine, taken
	// once a round (a goroutine profile stops the world): 0 when not.
	Goroutines int `json:"goroutines,omitempty"`
}

// WSExperiment is what the per-delivery experiment measured.
type WSExperiment struct {
	EmptyRoom string              `json:"empty_room"`
	Slots     []*WSExperimentSlot `json:"slots"`
	// Skipped says why it did not run (or stopped); "" when it ran.
	Skipped string `json:"skipped,omitempty"`
	// Void says why what it measured proves nothing (the empty room's
	// events reached connections); "" when nothing voided it.
	Void string `json:"void,omitempty"`
	// EmptyReceipts are the empty room's events received by the run's
	// connections, at EmptyConns of them: 0 in an experiment that holds.
	EmptyReceipts int64 `json:"empty_room_receipts"`
	EmptyConns    int64 `json:"empty_room_receipts_connections"`
	// Retried are the rooms slots run again with fewer events, their
	// deliveries having arrived too late (probes/ws/backlog.go).
	Retried int `json:"retried_slots,omitempty"`
}

// WSExperimentSlot is one slot: its kind, the events the target accepted
// in it, the deliveries they meant (events times the subscribers of their
// rooms) and its CPU profile.
type WSExperimentSlot struct {
	Kind       string `json:"kind"` // "rooms" or "empty"
	Events     int    `json:"events"`
	Failed     int    `json:"failed"`
	Deliveries int64  `json:"deliveries"`
	// Arrived are the rooms' markers received before the slot's profile
	// ended, Late those received after it (0 and 0: none came back).
	Arrived int64            `json:"arrived,omitempty"`
	Late    int64            `json:"late,omitempty"`
	CPU     *profile.Profile `json:"-"`
}
