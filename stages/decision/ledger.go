package decision

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cairn-run/cairn/storage/atomicfile"
)

// The attempt ledger of a collection: every attempt of every slot, written
// as it happens to a log that is synced before what it records goes on (an
// attempt's start before its process, a replacement's decision before the
// replacement), so that a run killed at any moment loses no charged attempt
// and counts none twice. Its files, in the ledger folder:
//
//	attempts.log   the log: one JSON event a line (start, end, replace,
//	               unstarted)
//	attempts.tsv   every attempt: slot, attempt, class, charged, start/end, peak
//	               (no end for one whose end no apply saw: cairn stopped)
//	attempts.json  the same as a JSON array
//
// Every node of a collection writes to the same ledger, each under the
// ledger's lock.
const (
	LedgerLog  = "attempts.log"
	LedgerTSV  = "attempts.tsv"
	LedgerJSON = "attempts.json"
	ledgerLock = "lock"
)

// Event is one line of the ledger's log.
type Event struct {
	Event   string    `json:"event"` // "start", "end", "replace" or "unstarted"
	Slot    string    `json:"slot"`
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
	RunID   string    `json:"run_id,omitempty"`
	Node    string    `json:"node,omitempty"`
	// Key is the node key of the slot's node (start): what the slot was
	// collected with.
	Key  string `json:"key,omitempty"`
	GPUs []int  `json:"gpus,omitempty"`
	// Simulated (start): the attempt runs on simulated GPUs, whose
	// memory readings are made up.
	Simulated bool `json:"simulated,omitempty"`
	// end
	State      State   `json:"state,omitempty"`
	Class      string  `json:"class,omitempty"`       // cairn's failure class, "" when it completed
	SetupClass string  `json:"setup_class,omitempty"` // the declared setup class its stderr matched
	ExitCode   *int    `json:"exit_code,omitempty"`
	PeakGPUMiB float64 `json:"peak_gpu_mib,omitempty"`
	PeakRSSMiB float64 `json:"peak_rss_mib,omitempty"`
	Message    string  `json:"message,omitempty"`
	// replace: the replacements decided so far in the whole ledger,
	// this one included.
	Replacements int `json:"replacements,omitempty"`
	// EndUnseen (end): no apply saw the attempt end: cairn stopped while
	// it ran (a kill -9), and a later apply records it interrupted. At is
	// when that apply did, not when the attempt ended, which is not known.
	EndUnseen bool `json:"end_unseen,omitempty"`
}

// Attempt is one started attempt of a slot, as the ledger's files show it.
type Attempt struct {
	Slot    string    `json:"slot"`
	Attempt int       `json:"attempt"`
	Charged bool      `json:"charged"` // every started attempt is
	Started time.Time `json:"started"`
	// Ended is null while the attempt runs, and for one whose end no
	// apply saw (EndUnseen): it has no end time, and so no duration.
	Ended *time.Time `json:"ended"`
	// EndUnseen: cairn stopped while the attempt ran, and a later apply
	// recorded it interrupted (unresolved, charged) without an end time:
	// when its process ended is not known.
	EndUnseen bool `json:"end_unseen,omitempty"`
	// Replacement: a replacement decided after the attempt before it.
	Replacement bool    `json:"replacement"`
	State       State   `json:"state"`
	Class       string  `json:"class"`
	SetupClass  string  `json:"setup_class"`
	ExitCode    *int    `json:"exit_code"`
	PeakGPUMiB  float64 `json:"peak_gpu_mib"`
	PeakRSSMiB  float64 `json:"peak_rss_mib"`
	GPUs        []int   `json:"gpus"`
	RunID       string  `json:"run_id"`
	Key         string  `json:"key"`
	Message     string  `json:"message"`
	// Simulated: it ran on simulated GPUs, its peak made up (its state
	// is not a measurement).
	Simulated bool `json:"simulated,omitempty"`
}

// Open reports whether the attempt has no end recorded: it runs, or it ran
// under a cairn that stopped and no apply has recorded it since.
func (a *Attempt) Open() bool { return a.Ended == nil && !a.EndUnseen }

// endUnseen reports whether an end event records an attempt whose end no
// apply saw: marked so, or, in a ledger written before the mark, the
// interrupted end a later apply recorded with this message.
func endUnseen(e Event) bool {
	return e.EndUnseen || e.Class == "interrupted" && strings.HasPrefix(e.Message, "cairn stopped while attempt ")
}

// SlotHistory is what the ledger knows of one slot.
type SlotHistory struct {
	Attempts []Attempt
	// Replacing is the attempt number of a replacement decided and not
	// started yet (0: none).
	Replacing int
}

// Last is the slot's last attempt, or nil.
func (h *SlotHistory) Last() *Attempt {
	if len(h.Attempts) == 0 {
		return nil
	}
	return &h.Attempts[len(h.Attempts)-1]
}

// Ledger is an attempt ledger folder.
type Ledger struct {
	Dir  string
	Sync bool // fsync the log (off only in tests and benchmarks)
}

// locked runs f with the ledger's lock held, with the events read so far.
func (l *Ledger) locked(f func(events []Event, appendEvent func(Event) error) error) error {
	if err := os.MkdirAll(l.Dir, 0o777); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	lk, err := os.OpenFile(filepath.Join(l.Dir, ledgerLock), os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	defer lk.Close()
	if err := unix.Flock(int(lk.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("ledger: lock: %w", err)
	}
	defer unix.Flock(int(lk.Fd()), unix.LOCK_UN)
	logPath := filepath.Join(l.Dir, LedgerLog)
	events, good, err := readEvents(logPath)
	if err != nil {
		return err
	}
	log, err := os.OpenFile(logPath, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	defer log.Close()
	// A torn last line (cairn killed mid-write) is dropped.
	if err := log.Truncate(good); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if _, err := log.Seek(good, 0); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	changed := false
	add := func(e Event) error {
		b, _ := json.Marshal(e)
		if _, err := log.Write(append(b, '\n')); err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
		if l.Sync {
			if err := log.Sync(); err != nil {
				return fmt.Errorf("ledger: %w", err)
			}
		}
		events = append(events, e)
		changed = true
		return nil
	}
	if err := f(events, add); err != nil {
		return err
	}
	if changed {
		return l.render(events)
	}
	return nil
}

// readEvents reads the log; good is the length of its whole lines.
func readEvents(path string) ([]Event, int64, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("ledger: %w", err)
	}
	var out []Event
	var good int64
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Bytes()
		end := good + int64(len(text)) + 1
		if end > int64(len(b)) { // no newline: torn
			break
		}
		var e Event
		if err := json.Unmarshal(text, &e); err != nil {
			if end == int64(len(b)) {
				break // a torn last line
			}
			return nil, 0, fmt.Errorf("ledger: %s:%d: not a ledger event: %v; the ledger is damaged, and cairn will not guess what it held", path, line, err)
		}
		out = append(out, e)
		good = end
	}
	return out, good, nil
}

// Histories rebuilds every slot's attempts from the events.
func Histories(events []Event) map[string]*SlotHistory {
	out := map[string]*SlotHistory{}
	for _, e := range events {
		h := out[e.Slot]
		if h == nil {
			h = &SlotHistory{}
			out[e.Slot] = h
		}
		switch e.Event {
		case "replace":
			h.Replacing = e.Attempt
		case "start":
			h.Attempts = append(h.Attempts, Attempt{Slot: e.Slot, Attempt: e.Attempt, Charged: true, Started: e.At,
				Replacement: h.Replacing == e.Attempt && e.Attempt > 1, State: Unresolved, GPUs: e.GPUs, RunID: e.RunID, Key: e.Key,
				Simulated: e.Simulated})
			if h.Replacing == e.Attempt {
				h.Replacing = 0
			}
		case "unstarted":
			// The executor never started the attempt's process: it is no
			// attempt, and not charged (a decided replacement stands).
			if last := h.Last(); last != nil && last.Attempt == e.Attempt && last.Open() {
				if last.Replacement {
					h.Replacing = e.Attempt
				}
				h.Attempts = h.Attempts[:len(h.Attempts)-1]
			}
		case "end":
			for i := range h.Attempts {
				a := &h.Attempts[i]
				if a.Attempt == e.Attempt {
					if endUnseen(e) {
						a.Ended, a.EndUnseen = nil, true
					} else {
						at := e.At
						a.Ended = &at
					}
					a.State, a.Class, a.SetupClass, a.ExitCode = e.State, e.Class, e.SetupClass, e.ExitCode
					a.PeakGPUMiB, a.PeakRSSMiB, a.Message = e.PeakGPUMiB, e.PeakRSSMiB, e.Message
					if len(e.GPUs) > 0 {
						a.GPUs = e.GPUs
					}
				}
			}
		}
	}
	return out
}

// Read returns what the ledger knows of every slot, read under its lock;
// a ledger folder that does not exist knows nothing (and is not created).
func (l *Ledger) Read() (map[string]*SlotHistory, error) {
	if _, err := os.Stat(l.Dir); os.IsNotExist(err) {
		return map[string]*SlotHistory{}, nil
	}
	var hs map[string]*SlotHistory
	err := l.locked(func(events []Event, _ func(Event) error) error {
		hs = Histories(events)
		return nil
	})
	return hs, err
}

// History returns what the ledger knows of slot.
func (l *Ledger) History(slot string) (*SlotHistory, error) {
	hs, err := l.Read()
	return slotOf(hs, slot), err
}

// Peek returns what the ledger knows of slot without its lock, writing
// nothing (a plan only looks): a line being written, or torn, is not
// read, as Read drops it.
func (l *Ledger) Peek(slot string) (*SlotHistory, error) {
	events, _, err := readEvents(filepath.Join(l.Dir, LedgerLog))
	if err != nil {
		return nil, err
	}
	return slotOf(Histories(events), slot), nil
}

// slotOf is slot's history in hs, empty when hs has none.
func slotOf(hs map[string]*SlotHistory, slot string) *SlotHistory {
	if h := hs[slot]; h != nil {
		return h
	}
	return &SlotHistory{}
}

// Start records that an attempt of slot starts now: synced before the
// caller starts its process, so that a crash cannot lose its charge.
func (l *Ledger) Start(e Event) error {
	e.Event, e.At = "start", time.Now().UTC()
	return l.locked(func(_ []Event, add func(Event) error) error { return add(e) })
}

// Unstarted records that an attempt recorded as starting never started:
// the executor could not start its process (its program not found, the
// kernel or the cluster refused it). It is then no attempt and not
// charged; only an executor's word that nothing ran may say so (a cairn
// that stops between Start and the process charges the attempt).
func (l *Ledger) Unstarted(e Event) error {
	e.Event, e.At = "unstarted", time.Now().UTC()
	return l.locked(func(_ []Event, add func(Event) error) error { return add(e) })
}

// End records how an attempt ended.
func (l *Ledger) End(e Event) error {
	e.Event, e.At = "end", time.Now().UTC()
	return l.locked(func(_ []Event, add func(Event) error) error { return add(e) })
}

// DecideReplacement decides whether slot may have an unchanged
// replacement after its attempt `after` failed with a declared setup
// class: at most one per slot and at most max in the whole ledger. A
// granted replacement is recorded (synced) before DecideReplacement
// returns, and so before it starts. It returns the replacements decided in
// the ledger, this one included when granted.
func (l *Ledger) DecideReplacement(slot string, after int, setupClass string, max int) (granted bool, total int, err error) {
	err = l.locked(func(events []Event, add func(Event) error) error {
		perSlot := 0
		for _, e := range events {
			if e.Event == "replace" {
				total++
				if e.Slot == slot {
					perSlot++
				}
			}
		}
		if perSlot >= MaxReplacementsPerSlot || total >= max {
			return nil
		}
		total++
		granted = true
		return add(Event{Event: "replace", Slot: slot, Attempt: after + 1, At: time.Now().UTC(), SetupClass: setupClass, Replacements: total})
	})
	return granted, total, err
}

// Attempts lists every attempt in the ledger, in the order they started.
func Attempts(events []Event) []Attempt {
	hs := Histories(events)
	var out []Attempt
	for _, h := range hs {
		out = append(out, h.Attempts...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Started.Equal(out[j].Started) {
			return out[i].Started.Before(out[j].Started)
		}
		if out[i].Slot != out[j].Slot {
			return out[i].Slot < out[j].Slot
		}
		return out[i].Attempt < out[j].Attempt
	})
	return out
}

// render rewrites the ledger's TSV and JSON files from its events, each
// whole or not at all. When an attempt ran on simulated GPUs, the TSV has
// a last column, simulated (true or false), so that a copied file still
// says which peaks were made up; in the JSON such an attempt has
// "simulated": true.
func (l *Ledger) render(events []Event) error {
	atts := Attempts(events)
	sim := slices.ContainsFunc(atts, func(a Attempt) bool { return a.Simulated })
	var tsv strings.Builder
	tsv.WriteString("slot\tattempt\tclass\tcharged\tstarted\tended\tpeak_gpu_mib\tstate\tsetup_class\treplacement\texit_code")
	if sim {
		tsv.WriteString("\tsimulated")
	}
	tsv.WriteString("\n")
	for _, a := range atts {
		ended, exit := "", ""
		if a.Ended != nil {
			ended = a.Ended.Format(time.RFC3339Nano)
		}
		if a.ExitCode != nil {
			exit = strconv.Itoa(*a.ExitCode)
		}
		fmt.Fprintf(&tsv, "%s\t%d\t%s\t%t\t%s\t%s\t%s\t%s\t%s\t%t\t%s", a.Slot, a.Attempt, a.Class, a.Charged,
			a.Started.Format(time.RFC3339Nano), ended, strconv.FormatFloat(a.PeakGPUMiB, 'f', -1, 64), a.State, a.SetupClass, a.Replacement, exit)
		if sim {
			fmt.Fprintf(&tsv, "\t%t", a.Simulated)
		}
		tsv.WriteString("\n")
	}
	if atts == nil {
		atts = []Attempt{}
	}
	js, _ := json.MarshalIndent(atts, "", "  ")
	for name, b := range map[string][]byte{LedgerTSV: []byte(tsv.String()), LedgerJSON: append(js, '\n')} {
		if err := atomicfile.Write(filepath.Join(l.Dir, name), b, l.Sync); err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
	}
	return nil
}
