package main

import (
	"fmt"
	"time"

	"golang.org/x/sys/windows"
)

// processCPU is the CPU time, user and system, this process has used.
func processCPU() time.Duration {
	var creation, exit, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &creation, &exit, &kernel, &user); err != nil {
		panic(fmt.Sprint("GetProcessTimes: ", err))
	}
	return filetimeDuration(kernel) + filetimeDuration(user)
}

// filetimeDuration is a Filetime read as a duration: it counts
// 100-nanosecond intervals.
func filetimeDuration(ft windows.Filetime) time.Duration {
	return time.Duration(int64(ft.HighDateTime)<<32|int64(ft.LowDateTime)) * 100
}
