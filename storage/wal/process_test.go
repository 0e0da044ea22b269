//go:build unix

package wal

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests below run this test binary again as child processes that write one
// log at the same time. TestHelperProcess is the child's entry point; it does
// nothing in a normal test run.

const helperEnv = "CAIRN_WAL_HELPER"

// helper starts a child process in the given mode; env holds its arguments.
func helper(t *testing.T, mode string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), append([]string{helperEnv + "=" + mode}, env...)...)
	cmd.Stderr = os.Stderr
	return cmd
}

func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		return
	}
	path := os.Getenv("WAL_PATH")
	id := os.Getenv("WAL_ID")
	var err error
	switch mode {
	case "append":
		err = helperAppend(path, id, atoi(os.Getenv("WAL_COUNT")))
	case "torn":
		err = helperTorn(path, atoi(os.Getenv("WAL_GOOD")))
	case "ackloop":
		err = helperAckLoop(path, id)
	default:
		err = fmt.Errorf("unknown helper mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return n
}

// helperAppend appends count records "<id> <goroutine> <seq> <filler>" from two
// goroutines, durably, through a Shared log.
func helperAppend(path, id string, count int) error {
	l, err := Open(path, Options{Shared: true})
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < count; i += 2 {
				p := fmt.Sprintf("%s %d %d %s", id, g, i, strings.Repeat("x", i%53))
				if err := l.Append([][]byte{[]byte(p)}, Durable); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return l.Close()
}

// helperTorn does what a Shared writer killed in the middle of a write leaves:
// under the lock it appends good complete records and then half of one, says so
// on stdout, and waits to be killed with the lock held.
func helperTorn(path string, good int) error {
	lk, err := openLock(path + ".lock")
	if err != nil {
		return err
	}
	if err := lk.lock(); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	var buf []byte
	for i := 0; i < good; i++ {
		p := []byte(fmt.Sprintf("child good %d", i))
		buf = appendRecord(buf, p, checksum(p))
	}
	p := []byte("child record that never finished")
	rec := appendRecord(nil, p, checksum(p))
	buf = append(buf, rec[:len(rec)/2]...)
	if _, err := f.Write(buf); err != nil {
		return err
	}
	fmt.Println("torn-written")
	time.Sleep(time.Hour)
	return nil
}

// helperAckLoop appends batches of 20 records of 1-4 KiB through a Shared log
// until it is killed, printing "ack <batch>" after each batch is durable.
func helperAckLoop(path, id string) error {
	l, err := Open(path, Options{Shared: true})
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	for b := 0; ; b++ {
		batch := make([][]byte, 20)
		for i := range batch {
			head := fmt.Sprintf("%s %d %d ", id, b, i)
			batch[i] = append([]byte(head), payload(b*20+i, 1024+(b*20+i)*97%3072)...)
		}
		if err := l.Append(batch, Durable); err != nil {
			return err
		}
		fmt.Fprintf(out, "ack %d\n", b)
		if err := out.Flush(); err != nil {
			return err
		}
	}
}

// TestSharedAcrossProcesses: four processes append 2,000 records each to one
// log at the same time while this process keeps reading it.
func TestSharedAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "actions.log")
	const children, perChild = 4, 2000
	var cmds []*exec.Cmd
	for c := 0; c < children; c++ {
		cmd := helper(t, "append", "WAL_PATH="+path, fmt.Sprintf("WAL_ID=c%d", c), fmt.Sprintf("WAL_COUNT=%d", perChild))
		require.NoError(t, cmd.Start())
		cmds = append(cmds, cmd)
	}
	waited := make(chan error, children)
	for _, cmd := range cmds {
		go func() { waited <- cmd.Wait() }()
	}

	// Readers see only valid records while the children write; a torn tail (a
	// write in progress) is fine, an error is not.
	reads := 0
	for done := 0; done < children; {
		select {
		case err := <-waited:
			require.NoError(t, err, "child failed")
			done++
		default:
			if _, err := os.Stat(path); err == nil {
				_, err := Read(path, nil)
				require.NoError(t, err, "read while children write")
				reads++
			}
			time.Sleep(time.Millisecond)
		}
	}
	t.Logf("%d reads while writing", reads)

	recs, st, err := readAll(t, path)
	require.NoError(t, err)
	assert.False(t, st.TornTail)
	require.Len(t, recs, children*perChild)
	seen := map[string]bool{}
	last := map[string]int{}
	for _, r := range recs {
		f := strings.Fields(string(r.payload))
		require.GreaterOrEqual(t, len(f), 3)
		key := f[0] + " " + f[2]
		require.False(t, seen[key], "record %s twice", key)
		seen[key] = true
		stream := f[0] + " " + f[1]
		i := atoi(f[2])
		if prev, ok := last[stream]; ok {
			require.Greater(t, i, prev, "stream %s out of order", stream)
		}
		last[stream] = i
	}
	assert.Len(t, seen, children*perChild)
}

// TestSharedWriterKilledMidWrite: a process dies holding the lock after writing
// two good records and half of a third. Readers see the good records and a torn
// tail; the next Shared commit (from a log opened before the crash) keeps the
// good records, cuts the half one off and appends after them.
func TestSharedWriterKilledMidWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "actions.log")
	l, err := Open(path, Options{Shared: true})
	require.NoError(t, err)
	defer l.Close()
	for i := 0; i < 3; i++ {
		require.NoError(t, l.Append([][]byte{[]byte(fmt.Sprintf("parent %d", i))}, Durable))
	}

	cmd := helper(t, "torn", "WAL_PATH="+path, "WAL_GOOD=2")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "torn-written\n", line)
	require.NoError(t, cmd.Process.Kill()) // SIGKILL
	_ = cmd.Wait()

	good := []string{"parent 0", "parent 1", "parent 2", "child good 0", "child good 1"}
	recs, st, err := readAll(t, path)
	require.NoError(t, err)
	assert.Equal(t, good, strs(recs))
	assert.True(t, st.TornTail)
	tornAt := st.TornAt

	require.NoError(t, l.Append([][]byte{[]byte("parent after")}, Durable))
	recs, st, err = readAll(t, path)
	require.NoError(t, err)
	assert.False(t, st.TornTail)
	assert.Equal(t, append(good, "parent after"), strs(recs))
	assert.Equal(t, tornAt, recs[len(recs)-1].off, "the new record replaces the torn one")
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, fi.Size(), l.Size())
}

// TestSharedWritersKilled: three processes append batches until they are all
// killed with SIGKILL at once, wherever they are. Every batch a child reported
// durable is in the log, nothing is duplicated, and after one more Shared append
// the log reads clean.
func TestSharedWritersKilled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "actions.log")
	const children, minAcks = 3, 15
	type child struct {
		cmd   *exec.Cmd
		acks  chan int
		acked int
	}
	var cs []*child
	for c := 0; c < children; c++ {
		cmd := helper(t, "ackloop", "WAL_PATH="+path, fmt.Sprintf("WAL_ID=k%d", c))
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		ch := &child{cmd: cmd, acks: make(chan int, 1024), acked: -1}
		go func() {
			defer close(ch.acks)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				var b int
				if _, err := fmt.Sscanf(sc.Text(), "ack %d", &b); err == nil {
					ch.acks <- b
				}
			}
		}()
		cs = append(cs, ch)
	}
	// Wait until every child has made some progress, then kill them all.
	for _, ch := range cs {
		for ch.acked < minAcks {
			b, ok := <-ch.acks
			require.True(t, ok, "child exited early")
			ch.acked = b
		}
	}
	for _, ch := range cs {
		require.NoError(t, ch.cmd.Process.Kill())
	}
	for _, ch := range cs {
		_ = ch.cmd.Wait()
		for b := range ch.acks {
			ch.acked = b
		}
	}

	_, st, err := readAll(t, path)
	require.NoError(t, err, "after the kill")
	t.Logf("after kill: %d records, torn tail %v", st.Records, st.TornTail)

	l, err := Open(path, Options{Shared: true})
	require.NoError(t, err)
	require.NoError(t, l.Append([][]byte{[]byte("survivor")}, Durable))
	require.NoError(t, l.Close())

	recs, st, err := readAll(t, path)
	require.NoError(t, err)
	assert.False(t, st.TornTail)
	require.Equal(t, "survivor", string(recs[len(recs)-1].payload))
	// Per child, records come in (batch, index) order with no gaps or repeats:
	// a killed write can only keep a prefix of its batch.
	next := map[string][2]int{}
	for _, r := range recs[:len(recs)-1] {
		var id string
		var b, i int
		_, err := fmt.Sscanf(string(r.payload), "%s %d %d ", &id, &b, &i)
		require.NoError(t, err)
		want := next[id]
		require.Equal(t, want, [2]int{b, i}, "child %s: unexpected record", id)
		if i == 19 {
			next[id] = [2]int{b + 1, 0}
		} else {
			next[id] = [2]int{b, i + 1}
		}
	}
	for c, ch := range cs {
		id := fmt.Sprintf("k%d", c)
		got := next[id]
		assert.Greater(t, got[0], ch.acked, "child %s: acknowledged batch %d is missing (log has up to %v)", id, ch.acked, got)
	}
}
