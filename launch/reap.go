package launch

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// OwnerEnv marks every process a build starts: its value names the Kavach
// process that started the build (pid and start time) and the build's
// directory. It is inherited by what the build forks, so a child that left
// the build's process group (setsid, a daemon's double fork) is still
// found: by Stop, and, after a kill -9 of Kavach, by the next Kavach's
// Sweep.
const OwnerEnv = "KAVACH_OWNER"

// owner is this process's pid and start time ("pid:start"), "" if /proc
// cannot tell.
var owner = sync.OnceValue(func() string { return procOwner(os.Getpid()) })

// procOwner is "pid:start" for a running process (start: its start time in
// clock ticks since boot, which tells it from a later process given the
// same pid), or "".
func procOwner(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command may hold spaces and parentheses: fields count from the
	// last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return strconv.Itoa(pid) + ":" + f[19] // field 22, starttime
}

// ownerValue is OwnerEnv's value for a build in dir.
func ownerValue(dir string) string { return owner() + ":" + dir }

// marked lists the processes of this user whose environment holds
// OwnerEnv, with its value.
func marked() map[int]string {
	out := map[int]string{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if v, ok := ownerOf(pid); ok {
			out[pid] = v
		}
	}
	return out
}

// markedWith reports whether process pid is marked with value.
func markedWith(pid int, value string) bool {
	v, ok := ownerOf(pid)
	return ok && v == value
}

// ownerOf is the OwnerEnv value in process pid's environment, if it
// holds one (and is this user's, and still there).
func ownerOf(pid int) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return "", false
	}
	key := []byte(OwnerEnv + "=")
	for _, kv := range bytes.Split(b, []byte{0}) {
		if bytes.HasPrefix(kv, key) {
			return string(kv[len(key):]), true
		}
	}
	return "", false
}

// Sweep removes what an earlier Kavach that could not clean up (kill -9,
// its watcher killed too) left: processes its builds started, still
// running (marked, or written down by its watcher); the builds' fresh
// directories (kavach-build-PID-*) and the clocks' (kavach-clock-PID-*) in
// the temporary directory and /dev/shm; and libfaketime's files in
// /dev/shm (faketime_shm_PID, sem.faketime_sem_PID) of processes gone.
// Only what belongs to a Kavach (or a build) no longer running is
// touched. It runs once per process, before the first build starts.
func Sweep() { sweepOnce() }

var sweepOnce = sync.OnceFunc(sweep)

func sweep() {
	for pid, v := range marked() {
		kavachPid, start, _ := strings.Cut(v, ":")
		start, _, _ = strings.Cut(start, ":")
		n, err := strconv.Atoi(kavachPid)
		if err != nil {
			continue
		}
		if procOwner(n) != kavachPid+":"+start {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	// What the watcher of a Kavach that is gone last saw of its builds,
	// should it have been killed too (a server that rewrote its
	// environment, and so its mark, for its process title is found so).
	uid := os.Getuid()
	for _, dir := range []string{os.TempDir(), "/dev/shm"} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			pid, err := strconv.Atoi(strings.TrimPrefix(e.Name(), seenPrefix))
			if !strings.HasPrefix(e.Name(), seenPrefix) || err != nil || pid <= 0 || processExists(pid) {
				continue
			}
			if st, err := os.Lstat(filepath.Join(dir, e.Name())); err == nil && st.Mode().IsRegular() && ownedBy(st, uid) {
				killSeen(filepath.Join(dir, e.Name()))
			}
		}
	}
	sweepFiles(func(pid int) bool { return !processExists(pid) })
}

// sweepFiles removes the directories and files Sweep removes, of the
// processes for which gone is true: those of this user named for them.
func sweepFiles(gone func(pid int) bool) {
	uid := os.Getuid()
	for _, dir := range []string{os.TempDir(), "/dev/shm"} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			name := e.Name()
			var pidText string
			named := true // a directory named PID-RANDOM (DirPattern): others are left alone
			switch {
			case strings.HasPrefix(name, "kavach-build-") && e.IsDir():
				pidText, _, named = strings.Cut(strings.TrimPrefix(name, "kavach-build-"), "-")
			case strings.HasPrefix(name, "kavach-clock-") && e.IsDir():
				pidText, _, named = strings.Cut(strings.TrimPrefix(name, "kavach-clock-"), "-")
			case strings.HasPrefix(name, "kavach-state-") && e.IsDir():
				pidText, _, named = strings.Cut(strings.TrimPrefix(name, "kavach-state-"), "-")
			case strings.HasPrefix(name, seenPrefix):
				// kavach-watch-PID, and its temporary kavach-watch-PID-*.tmp
				pidText, _, _ = strings.Cut(strings.TrimPrefix(name, seenPrefix), "-")
			case dir == "/dev/shm" && strings.HasPrefix(name, "faketime_shm_"):
				pidText = strings.TrimPrefix(name, "faketime_shm_")
			case dir == "/dev/shm" && strings.HasPrefix(name, "sem.faketime_sem_"):
				pidText = strings.TrimPrefix(name, "sem.faketime_sem_")
			default:
				continue
			}
			pid, err := strconv.Atoi(pidText)
			if !named || err != nil || pid <= 0 || !gone(pid) {
				continue
			}
			path := filepath.Join(dir, name)
			if st, err := os.Lstat(path); err != nil || !ownedBy(st, uid) {
				continue
			}
			os.RemoveAll(path)
		}
	}
}

// processExists reports whether a process (or a zombie) has pid.
func processExists(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

func ownedBy(st os.FileInfo, uid int) bool {
	s, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(s.Uid) == uid
}

// DirPattern is the pattern of a build's fresh directory, for
// os.MkdirTemp: it names this process, so that Sweep can tell whether its
// owner is gone.
func DirPattern(kind string) string { return fmt.Sprintf("kavach-%s-%d-", kind, os.Getpid()) }

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER.
const prSetChildSubreaper = 36

// Subreaper makes this process the child subreaper of what it starts,
// once, before its first build: a process a build forks whose parent
// exits (a wrapper script's server, a double fork) is re-parented to
// Kavach rather than to init, so it stays in reach until Stop kills and
// reaps it (killAndReap). It reports whether the kernel agreed.
var Subreaper = sync.OnceValue(func() bool {
	// The watcher first: started after, it would be re-parented to this
	// process when its intermediate exits (watch.go).
	watcher()
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	return errno == 0
})

// killAndReap kills what a stopped build left — every process marked
// with value, wherever it went, and what is still in its process group
// pgid (a process that cleared its environment) — and reaps those of them
// that became this process's children (Subreaper). Only those: a child
// os/exec started (leader among them, already reaped by its Wait) is
// never waited for here, so no exit status is taken from it.
//
// As the subreaper, every process the build left comes to this process
// once its parent is gone, so only this process's children are looked
// at, pass after pass, until a pass finds none of the build's: a
// handful of /proc files per stop rather than every process's
// environment (a replay stops one build per variant). Without it, every
// process of the machine marked with value is a victim from the start.
func killAndReap(value string, pgid, leader int) {
	victims := map[int]bool{}
	sub := Subreaper()
	if !sub {
		for pid, v := range marked() {
			if v == value && pid != leader {
				victims[pid] = true
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	self := os.Getpid()
	deadline := time.Now().Add(2 * time.Second)
	for clean := 0; clean < 2; {
		found := false
		for _, c := range children(self) {
			if c.pid == leader {
				continue
			}
			if !victims[c.pid] && c.pgrp != pgid && !(sub && markedWith(c.pid, value)) {
				continue
			}
			victims[c.pid], found = true, true
			syscall.Kill(c.pid, syscall.SIGKILL)
			var ws syscall.WaitStatus
			syscall.Wait4(c.pid, &ws, syscall.WNOHANG, nil)
		}
		// A victim still under another victim that is dying comes to this
		// process next.
		for pid := range victims {
			if st, ok := readStat(pid); ok && victims[st.ppid] {
				found = true
			}
		}
		// Two passes in a row with none of the build's: the children files
		// can miss a child while others exit as they are read.
		if clean++; found {
			clean = 0
		}
		if clean == 2 || time.Now().After(deadline) {
			return
		}
		if found {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// procStat is what killAndReap and the watcher read of /proc/PID/stat.
type procStat struct {
	pid, ppid, pgrp, session int
	state                    byte   // R, S, D, Z...
	start                    string // clock ticks since boot (procOwner)
}

func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || len(f[0]) == 0 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	session, err3 := strconv.Atoi(f[3])
	if err1 != nil || err2 != nil || err3 != nil {
		return procStat{}, false
	}
	return procStat{pid: pid, ppid: ppid, pgrp: pgrp, session: session, state: f[0][0], start: f[19]}, true
}

// children lists the processes whose parent is pid (zombies included)
// (childPids).
func children(pid int) []procStat {
	var out []procStat
	for _, n := range childPids(pid) {
		if st, ok := readStat(n); ok && st.ppid == pid {
			out = append(out, st)
		}
	}
	return out
}

// Threads are the thread ids of process pid, as /proc names them; none
// for a process gone.
func Threads(pid int) []string {
	d, err := os.Open("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	return names
}
