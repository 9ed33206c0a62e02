package proctest

import (
	"errors"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// stillActive is the exit code GetExitCodeProcess reports for a process
// that has not exited.
const stillActive = 259

// Exists reports whether pid names a process that has not exited.
func Exists(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return !errors.Is(err, windows.ERROR_INVALID_PARAMETER) // the error for no such process
	}
	defer windows.CloseHandle(h)
	var code uint32
	return windows.GetExitCodeProcess(h, &code) != nil || code == stillActive
}

// GroupExists reports whether the process pgid or any process descended
// from it still runs. Windows has no process groups; its nearest kin, the
// tree a process started, is what a Unix test means by the group a server
// leads. Parent ids are never updated, so a descendant whose parent died is
// still found.
func GroupExists(pgid int) bool {
	procs, err := processes()
	if err != nil {
		return true // unknown: the careful answer for a test of leftovers
	}
	for pid := range tree(procs, uint32(pgid)) {
		if Exists(int(pid)) {
			return true
		}
	}
	return false
}

// tree returns root and the ids of every process in procs descended from it.
func tree(procs []windows.ProcessEntry32, root uint32) map[uint32]bool {
	ids := map[uint32]bool{root: true}
	for grew := true; grew; {
		grew = false
		for _, p := range procs {
			if ids[p.ParentProcessID] && !ids[p.ProcessID] {
				ids[p.ProcessID] = true
				grew = true
			}
		}
	}
	return ids
}

// processes lists every process, with its parent's id.
func processes() ([]windows.ProcessEntry32, error) {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return nil, err
	}
	defer windows.CloseHandle(snap)
	var list []windows.ProcessEntry32
	entry := windows.ProcessEntry32{Size: uint32(unsafe.Sizeof(windows.ProcessEntry32{}))}
	for err = windows.Process32First(snap, &entry); err == nil; err = windows.Process32Next(snap, &entry) {
		list = append(list, entry)
	}
	return list, nil
}

// Kill kills the process pid alone, as a crash would.
func Kill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// KillGroup kills the process pgid and every process descended from it.
func KillGroup(pgid int) error {
	procs, err := processes()
	if err != nil {
		return err
	}
	var errs []error
	for pid := range tree(procs, uint32(pgid)) {
		if err := Kill(int(pid)); err != nil && Exists(int(pid)) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
