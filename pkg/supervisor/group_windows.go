package supervisor

import (
	"fmt"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

// stopRequest names how a group is asked to stop, for the log of a server
// that outlived its grace: Windows has no signal that a process without a
// console of its own can catch, so the request is the end of its stdin,
// which the session's close gives it before stop.
const stopRequest = "its stdin closed"

// group is the job object a stdio server and every process it starts run
// in. The job kills them all when its last handle closes
// (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE): the supervisor holds that handle,
// so should musterd die without stopping the server, Windows closes it and
// the whole tree dies with musterd.
type group struct {
	mu  sync.Mutex
	job windows.Handle // 0 once released
}

// newGroup creates proc's job, assigns proc to it and then lets proc run:
// proc was started suspended (sysProcAttr), so every process it starts is
// in the job too.
func newGroup(proc *os.Process) (*group, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("creating a job object: %w", err)
	}
	g := &group{job: job}
	if err := g.adopt(uint32(proc.Pid)); err != nil {
		g.release()
		return nil, err
	}
	return g, nil
}

// adopt sets the job to kill its processes when closed, assigns the
// suspended process pid to it and resumes it.
func (g *group) adopt(pid uint32) error {
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
		},
	}
	if _, err := windows.SetInformationJobObject(g.job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		return fmt.Errorf("setting the job object to kill on close: %w", err)
	}
	proc, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, pid)
	if err != nil {
		return fmt.Errorf("opening process %d: %w", pid, err)
	}
	defer windows.CloseHandle(proc)
	if err := windows.AssignProcessToJobObject(g.job, proc); err != nil {
		return fmt.Errorf("assigning process %d to its job object: %w", pid, err)
	}
	return resumeThreads(pid)
}

// resumeThreads resumes the threads of the process pid, started suspended:
// os/exec keeps no handle to its main thread, so it is found by its
// owner's id.
func resumeThreads(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return fmt.Errorf("listing the threads of process %d: %w", pid, err)
	}
	defer windows.CloseHandle(snap)
	entry := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := 0
	for err = windows.Thread32First(snap, &entry); err == nil; err = windows.Thread32Next(snap, &entry) {
		if entry.OwnerProcessID != pid {
			continue
		}
		thread, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, entry.ThreadID)
		if err != nil {
			return fmt.Errorf("opening thread %d of process %d: %w", entry.ThreadID, pid, err)
		}
		_, err = windows.ResumeThread(thread)
		_ = windows.CloseHandle(thread)
		if err != nil {
			return fmt.Errorf("resuming thread %d of process %d: %w", entry.ThreadID, pid, err)
		}
		resumed++
	}
	if resumed == 0 {
		return fmt.Errorf("resuming process %d: no thread of it found", pid)
	}
	return nil
}

// terminate does nothing more: the server's stdin is closed already, the
// one request to stop that Windows can pass to it. It gets its grace to
// exit on that before kill.
func (g *group) terminate() {}

// kill terminates every process of the job, the server's whole tree. Once
// the job is released it does nothing.
func (g *group) kill() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.job != 0 {
		_ = windows.TerminateJobObject(g.job, 1)
	}
}

// release closes the job, after kill: its handle is not used again, and a
// late kill does nothing.
func (g *group) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.job != 0 {
		_ = windows.CloseHandle(g.job)
		g.job = 0
	}
}
