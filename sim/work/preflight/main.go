// Command preflight is a SIMULATED stand-in for check_engine_config(CONFIG),
// for running cairn's seed-000 pipelines on machines without GPUs. It reports
// no real measurement. See package github.com/cairn-run/cairn/sim/simlib.
package main

import "github.com/cairn-run/cairn/sim/simlib"

func main() { simlib.Main(simlib.Preflight) }
