package gpu

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Render prints what `cairn gpus` shows: where the devices come from, then one row per
// device with its index, UUID, name, memory used/total, compute processes, and whether it is
// free and why not. holders (from LeaseDir.Holders, may be nil) marks leased devices with
// who holds them. A simulated inventory is named as such.
func Render(w io.Writer, inv Inventory, st []Status, holders map[int]Holder) {
	if inv != nil {
		if inv.Source() == SourceSimulated {
			fmt.Fprintln(w, "SIMULATED GPUs: these are not real devices.")
		}
		fmt.Fprintln(w, inv.Note())
	}
	if len(st) == 0 {
		fmt.Fprintln(w, "no GPUs to offer")
		return
	}
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GPU\tUUID\tNAME\tMEMORY USED/TOTAL\tPROCESSES\tSTATE\tWHY")
	for _, s := range st {
		d := s.Device
		state, why := "busy", s.Why
		if s.Free {
			state, why = "free", ""
			if s.Why != "free" {
				why = s.Why
			}
		}
		if h, ok := holders[d.Index]; ok {
			state = "leased"
			why = "by " + h.String()
			if !h.Since.IsZero() {
				why += " since " + h.Since.Local().Format(time.DateTime)
			}
		}
		name := d.Name
		if d.Simulated && !strings.Contains(strings.ToLower(name), "simulated") {
			name += " (simulated)"
		}
		mem := "-"
		if d.MemTotalMiB > 0 {
			mem = fmt.Sprintf("%d / %d MiB", d.MemUsedMiB, d.MemTotalMiB)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n",
			d.Index, dash(d.UUID), dash(name), mem, processList(d.Processes), state, why)
	}
	tw.Flush()
	for line := range strings.Lines(table.String()) {
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// processList writes processes as "pid:MiB" items ("12:18432M 40:512M"), "-" for none.
func processList(ps []Process) string {
	if len(ps) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(ps))
	for _, p := range ps {
		id := fmt.Sprint(p.PID)
		if p.PID == 0 {
			id = "sim"
		}
		if p.UsedMiB > 0 {
			parts = append(parts, fmt.Sprintf("%s:%dM", id, p.UsedMiB))
		} else {
			parts = append(parts, id)
		}
	}
	if len(parts) > 6 {
		parts = append(parts[:6], fmt.Sprintf("+%d more", len(ps)-6))
	}
	return strings.Join(parts, " ")
}
