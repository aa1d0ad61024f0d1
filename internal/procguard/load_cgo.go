//go:build linux && cgo

package procguard

/*
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_LOWER 3
#endif

// polyloop_guard_drop_ptrace runs when the program is loaded, before the Go
// runtime starts its first thread: CAP_SYS_PTRACE leaves the bounding,
// inheritable, ambient, permitted and effective sets of the one thread
// there is (as a re-executed image would lack it), and every thread
// created after inherits that. Failures (an ordinary user cannot change
// the bounding set, and has nothing in it to fear) are ignored, as
// dropPtrace ignores them.
__attribute__((constructor)) static void polyloop_guard_drop_ptrace(void) {
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];
	prctl(PR_CAPBSET_DROP, CAP_SYS_PTRACE, 0, 0, 0);
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, CAP_SYS_PTRACE, 0, 0);
	if (syscall(SYS_capget, &hdr, data) == 0) {
		data[CAP_SYS_PTRACE / 32].inheritable &= ~(1u << (CAP_SYS_PTRACE % 32));
		data[CAP_SYS_PTRACE / 32].permitted &= ~(1u << (CAP_SYS_PTRACE % 32));
		data[CAP_SYS_PTRACE / 32].effective &= ~(1u << (CAP_SYS_PTRACE % 32));
		syscall(SYS_capset, &hdr, data);
	}
}
*/
import "C"

// droppedAtLoad: in a program linked with cgo, where Go cannot run a system
// call on every thread (syscall.AllThreadsSyscall), CAP_SYS_PTRACE is
// dropped by the C constructor above, before there is more than one
// thread. A program that links this package (polyloop, its tests) never
// has CAP_SYS_PTRACE.
const droppedAtLoad = true
