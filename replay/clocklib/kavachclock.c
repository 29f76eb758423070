/*
 * kavachclock: the replay's virtual clock, preloaded into a build
 * (LD_PRELOAD) by Kavach. docs/replay.md, "The clock library", says what
 * it does and why; this comment says how.
 *
 * The clock lives in one shared page (a file in /dev/shm named by
 * KAVACH_CLOCK) that the replay writes and every process of the build
 * maps: the virtual wall clock and the virtual monotonic clock, in
 * nanoseconds, under a sequence counter (odd while the replay writes, so
 * a read never sees half a move). A clock read is a few loads from that
 * page: no system call, no allocation, no symbol looked up, so it is safe
 * while an allocator (jemalloc) initialises and calls it.
 *
 * The library also takes over the waits a build times with the clock
 * (epoll_wait, poll, select, nanosleep and their kin): their timeouts are
 * virtual. A waiting thread publishes its deadline, in virtual monotonic
 * time, in a slot of the page, and waits with the kick signal unblocked
 * (the p-variants of the calls, so a kick sent before the wait begins is
 * not lost). The replay, after a move, kicks the threads whose deadline
 * it crossed and waits until each has entered its next wait after the
 * move: the build woke, ran its timers on the new time and went idle.
 * A move that crosses no deadline costs nothing.
 *
 * Two modes: 1 (running), in which the monotonic clock runs at the rate
 * of the real one and the wall clock stays where it is (while the build
 * starts and stops, so that its own sleeps and a shutdown timer end), and
 * 0 (frozen), in which both clocks move only when the replay moves them.
 *
 * Clocks other than the wall and monotonic ones (CPU-time clocks) are
 * read from the kernel with a raw system call. Nothing here allocates or
 * calls dlsym.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* The page's layout; replay/clock.go holds the same offsets. */
#define MAGIC 0x3143564bu /* "KVC1" */
#define NSLOTS 120
#define RUNNING 0u
#define WAITING 1u /* in an event loop's wait (epoll, poll, select) */
#define SLEEPING 2u /* in a sleep (nanosleep and its kin) */

struct slot {
	int32_t tid;
	int32_t pid;
	uint32_t state; /* RUNNING, WAITING or SLEEPING */
	uint32_t gen; /* waits entered */
	uint64_t entry_seq; /* the page's seq when the wait was entered */
	int64_t deadline; /* virtual monotonic ns; INT64_MAX: none */
};

struct page {
	uint32_t magic;
	uint32_t version;
	uint64_t seq;
	int64_t real_ns;
	int64_t mono_ns;
	uint32_t mode; /* 0 frozen, 1 running */
	int32_t signo; /* the kick signal, set by the library */
	int64_t base; /* kernel monotonic ns where mode 1 began */
	uint64_t loaded; /* processes that mapped the page */
	uint8_t pad[8];
	struct slot slots[NSLOTS];
};

_Static_assert(sizeof(struct slot) == 32, "slot layout");
_Static_assert(__builtin_offsetof(struct page, slots) == 64, "page layout");
_Static_assert(sizeof(struct page) <= 4096, "one page");

#define EXPORT __attribute__((visibility("default")))
#define NS 1000000000LL

static struct page *pg;
static int pg_none; /* no page: KAVACH_CLOCK unset or unusable */
static int kick_signo;

/* Per thread: the slot it waits in (index + 1), its clock reads, and
 * whether the kick signal ended its wait. Initial-exec TLS: no
 * allocation on first use. */
#define TLS __thread __attribute__((tls_model("initial-exec")))
static TLS int my_slot_index;
static TLS uint64_t read_seq; /* seq of this thread's last clock read */
static TLS int64_t read_mono; /* the monotonic time it read then */
static TLS uint64_t entry_seq; /* seq at its last wait */
static TLS volatile sig_atomic_t kicked;

static int64_t kernel_clock(clockid_t id)
{
	struct timespec ts;
	if (syscall(SYS_clock_gettime, id, &ts) != 0)
		return 0;
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

static void on_kick(int sig)
{
	(void)sig;
	kicked = 1;
}

static void after_fork_child(void)
{
	my_slot_index = 0; /* a new thread id: claim a slot of its own */
}

static struct page *map_page(void)
{
	const char *path = getenv("KAVACH_CLOCK");
	if (path == NULL || *path == 0) {
		__atomic_store_n(&pg_none, 1, __ATOMIC_RELEASE);
		return NULL;
	}
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		__atomic_store_n(&pg_none, 1, __ATOMIC_RELEASE);
		return NULL;
	}
	void *m = (void *)syscall(SYS_mmap, NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	syscall(SYS_close, fd);
	if (m == MAP_FAILED || ((struct page *)m)->magic != MAGIC) {
		if (m != MAP_FAILED)
			syscall(SYS_munmap, m, 4096);
		__atomic_store_n(&pg_none, 1, __ATOMIC_RELEASE);
		return NULL;
	}
	struct page *want = NULL;
	if (!__atomic_compare_exchange_n(&pg, &want, (struct page *)m, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		syscall(SYS_munmap, m, 4096); /* another thread mapped it first */
		return want;
	}
	__atomic_add_fetch(&((struct page *)m)->loaded, 1, __ATOMIC_RELEASE);
	return (struct page *)m;
}

static inline struct page *page(void)
{
	struct page *p = __atomic_load_n(&pg, __ATOMIC_ACQUIRE);
	if (__builtin_expect(p != NULL, 1))
		return p;
	if (__atomic_load_n(&pg_none, __ATOMIC_ACQUIRE))
		return NULL;
	return map_page();
}

/* The kick signal is blocked in every thread (threads inherit the mask
 * of the one that made them) and unblocked only inside a wait, so a kick
 * never interrupts anything else, and one sent just before a wait begins
 * ends that wait at once. */
__attribute__((constructor)) static void init(void)
{
	struct page *p = page();
	if (p == NULL)
		return;
	kick_signo = SIGRTMAX - 3;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_kick;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(kick_signo, &sa, NULL) != 0) {
		kick_signo = 0;
		return;
	}
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, kick_signo);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	pthread_atfork(NULL, NULL, after_fork_child);
	__atomic_store_n(&p->signo, kick_signo, __ATOMIC_RELEASE);
}

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* vnow reads both virtual clocks and the seq they belong to. */
static void vnow(struct page *p, int64_t *real, int64_t *mono, uint64_t *seq)
{
	for (int spins = 0;; spins++) {
		uint64_t s = __atomic_load_n(&p->seq, __ATOMIC_ACQUIRE);
		if ((s & 1) && spins < 1000000) {
			relax();
			continue;
		}
		int64_t r = __atomic_load_n(&p->real_ns, __ATOMIC_RELAXED);
		int64_t m = __atomic_load_n(&p->mono_ns, __ATOMIC_RELAXED);
		uint32_t mode = __atomic_load_n(&p->mode, __ATOMIC_RELAXED);
		int64_t base = __atomic_load_n(&p->base, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&p->seq, __ATOMIC_RELAXED) != s && spins < 1000000)
			continue;
		if (mode == 1) {
			int64_t d = kernel_clock(CLOCK_MONOTONIC) - base;
			if (d > 0)
				m += d;
		}
		*real = r;
		*mono = m;
		*seq = s;
		return;
	}
}

/* The clocks that follow the virtual wall clock, and those that follow
 * the virtual monotonic one; the rest (CPU time) are the kernel's. */
static int wall_clock(clockid_t id)
{
	return id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE || id == CLOCK_REALTIME_ALARM || id == CLOCK_TAI;
}

static int mono_clock(clockid_t id)
{
	return id == CLOCK_MONOTONIC || id == CLOCK_MONOTONIC_RAW || id == CLOCK_MONOTONIC_COARSE ||
	       id == CLOCK_BOOTTIME || id == CLOCK_BOOTTIME_ALARM;
}

static int64_t read_clock(struct page *p, clockid_t id)
{
	int64_t r, m;
	uint64_t s;
	vnow(p, &r, &m, &s);
	read_seq = s;
	read_mono = m;
	return wall_clock(id) ? r : m;
}

static void to_timespec(int64_t v, struct timespec *ts)
{
	int64_t sec = v / NS, ns = v % NS;
	if (ns < 0) {
		ns += NS;
		sec--;
	}
	ts->tv_sec = (time_t)sec;
	ts->tv_nsec = (long)ns;
}

EXPORT int clock_gettime(clockid_t id, struct timespec *ts)
{
	struct page *p = page();
	if (p == NULL || !(wall_clock(id) || mono_clock(id)))
		return (int)syscall(SYS_clock_gettime, id, ts);
	to_timespec(read_clock(p, id), ts);
	return 0;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnonnull-compare"
EXPORT int gettimeofday(struct timeval *tv, void *tz)
{
	struct page *p = page();
	if (p == NULL)
		return (int)syscall(SYS_gettimeofday, tv, tz);
	if (tz != NULL)
		memset(tz, 0, sizeof(struct timezone));
	if (tv != NULL) { /* declared nonnull, passed NULL all the same */
		struct timespec ts;
		to_timespec(read_clock(p, CLOCK_REALTIME), &ts);
		tv->tv_sec = ts.tv_sec;
		tv->tv_usec = ts.tv_nsec / 1000;
	}
	return 0;
}
#pragma GCC diagnostic pop

EXPORT time_t time(time_t *t)
{
	struct page *p = page();
	time_t v;
	if (p == NULL) {
		v = (time_t)(kernel_clock(CLOCK_REALTIME) / NS);
	} else {
		struct timespec ts;
		to_timespec(read_clock(p, CLOCK_REALTIME), &ts);
		v = ts.tv_sec;
	}
	if (t != NULL)
		*t = v;
	return v;
}

EXPORT int timespec_get(struct timespec *ts, int base)
{
	if (base != TIME_UTC)
		return 0;
	return clock_gettime(CLOCK_REALTIME, ts) == 0 ? base : 0;
}

/* my_slot is the calling thread's slot, claimed on its first wait: a free
 * one, else one whose thread is gone. NULL when all are taken. */
static struct slot *my_slot(struct page *p)
{
	if (my_slot_index > 0)
		return &p->slots[my_slot_index - 1];
	int32_t tid = (int32_t)syscall(SYS_gettid);
	int32_t pid = (int32_t)syscall(SYS_getpid);
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < NSLOTS; i++) {
			struct slot *s = &p->slots[i];
			int32_t old = __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE);
			if (old != 0) {
				if (pass == 0)
					continue;
				int32_t opid = __atomic_load_n(&s->pid, __ATOMIC_RELAXED);
				if (syscall(SYS_tgkill, opid, old, 0) == 0 || errno != ESRCH)
					continue;
			}
			if (!__atomic_compare_exchange_n(&s->tid, &old, tid, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
				continue;
			__atomic_store_n(&s->state, RUNNING, __ATOMIC_RELAXED);
			__atomic_store_n(&s->deadline, INT64_MAX, __ATOMIC_RELAXED);
			__atomic_store_n(&s->pid, pid, __ATOMIC_RELEASE);
			my_slot_index = i + 1;
			return s;
		}
	}
	return NULL;
}

/* A real wait: fn waits for up to timeout_ns of real time (< 0: no
 * limit) with the signal mask mask, and returns as the system call does
 * (-1 and errno on error). */
typedef long (*waitfn)(void *arg, int64_t timeout_ns, const sigset_t *mask);

/*
 * vwait runs a wait whose timeout, timeout_ns (< 0: none), is virtual.
 * It returns fn's result when something other than the clock ends the
 * wait, 0 when the virtual deadline has come. The deadline counts from
 * the thread's last clock read when the clock moved after that read and
 * no wait of the thread has begun since (the build computed the timeout
 * from what it read: Redis reads the monotonic clock, then waits until
 * its next timer); otherwise from now.
 *
 * *deadline_out, when not NULL, gets the deadline (for nanosleep's
 * remainder).
 */
static long vwait(int64_t timeout_ns, waitfn fn, void *arg, const sigset_t *caller_mask, int64_t *deadline_out, uint32_t state)
{
	struct page *p = page();
	int signo = kick_signo;
	if (p == NULL || signo == 0 || timeout_ns == 0)
		return fn(arg, timeout_ns, caller_mask);
	int64_t r, m;
	uint64_t s;
	vnow(p, &r, &m, &s);
	int64_t base = m;
	if (read_seq != 0 && read_seq >= entry_seq && read_seq != s)
		base = read_mono;
	int64_t deadline = INT64_MAX;
	if (timeout_ns > 0 && timeout_ns < INT64_MAX - base)
		deadline = base + timeout_ns;
	if (deadline_out != NULL)
		*deadline_out = deadline;

	sigset_t during;
	sigemptyset(&during);
	if (caller_mask != NULL)
		during = *caller_mask;
	else
		syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &during, _NSIG / 8);
	sigdelset(&during, signo);

	struct slot *sl = my_slot(p);
	for (;;) {
		vnow(p, &r, &m, &s);
		entry_seq = s;
		if (deadline <= m)
			return 0;
		int64_t real = deadline == INT64_MAX ? -1 : deadline - m;
		if (sl != NULL) {
			__atomic_store_n(&sl->deadline, deadline, __ATOMIC_RELAXED);
			__atomic_store_n(&sl->entry_seq, s, __ATOMIC_RELAXED);
			__atomic_store_n(&sl->state, state, __ATOMIC_RELAXED);
			__atomic_add_fetch(&sl->gen, 1, __ATOMIC_SEQ_CST);
			if (__atomic_load_n(&p->seq, __ATOMIC_SEQ_CST) != s) {
				/* The clock moved while this was published: the
				 * replay may have looked before it; look again. */
				__atomic_store_n(&sl->state, RUNNING, __ATOMIC_RELEASE);
				continue;
			}
		} else if (real < 0 || real > 1000000) {
			real = 1000000; /* no slot: nobody kicks it; look every ms */
		}
		kicked = 0;
		long ret = fn(arg, real, &during);
		int e = errno;
		if (sl != NULL)
			__atomic_store_n(&sl->state, RUNNING, __ATOMIC_RELEASE);
		if (ret == 0)
			continue; /* real time ran out: is the virtual deadline here? */
		if (ret < 0 && e == EINTR && kicked) {
			kicked = 0;
			continue; /* the replay moved the clock */
		}
		errno = e;
		return ret;
	}
}

static struct timespec *real_timespec(int64_t ns, struct timespec *ts)
{
	if (ns < 0)
		return NULL;
	to_timespec(ns, ts);
	return ts;
}

static int ms_of(int64_t ns)
{
	if (ns < 0)
		return -1;
	int64_t ms = (ns + 999999) / 1000000;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* epoll */

struct epoll_args {
	int epfd;
	struct epoll_event *events;
	int maxevents;
};

static long epoll_fn(void *a, int64_t ns, const sigset_t *mask)
{
	struct epoll_args *e = a;
	return syscall(SYS_epoll_pwait, e->epfd, e->events, e->maxevents, ms_of(ns), mask, _NSIG / 8);
}

EXPORT int epoll_pwait(int epfd, struct epoll_event *events, int maxevents, int timeout, const sigset_t *sigmask)
{
	struct epoll_args a = {epfd, events, maxevents};
	return (int)vwait(timeout < 0 ? -1 : (int64_t)timeout * 1000000, epoll_fn, &a, sigmask, NULL, WAITING);
}

EXPORT int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout)
{
	return epoll_pwait(epfd, events, maxevents, timeout, NULL);
}

/* poll */

struct poll_args {
	struct pollfd *fds;
	nfds_t nfds;
};

static long poll_fn(void *a, int64_t ns, const sigset_t *mask)
{
	struct poll_args *pa = a;
	struct timespec ts;
	return syscall(SYS_ppoll, pa->fds, pa->nfds, real_timespec(ns, &ts), mask, _NSIG / 8);
}

static int64_t timespec_ns(const struct timespec *ts)
{
	if (ts == NULL)
		return -1;
	if (ts->tv_sec >= INT64_MAX / NS)
		return INT64_MAX;
	return (int64_t)ts->tv_sec * NS + ts->tv_nsec;
}

EXPORT int ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *tmo, const sigset_t *sigmask)
{
	struct poll_args a = {fds, nfds};
	return (int)vwait(timespec_ns(tmo), poll_fn, &a, sigmask, NULL, WAITING);
}

EXPORT int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	struct poll_args a = {fds, nfds};
	return (int)vwait(timeout < 0 ? -1 : (int64_t)timeout * 1000000, poll_fn, &a, NULL, NULL, WAITING);
}

/* select: the sets are restored before each wait, since the kernel
 * clears them when the real timeout ends one. */

struct select_args {
	int nfds;
	fd_set *r, *w, *x;
	fd_set r0, w0, x0;
};

static long select_fn(void *a, int64_t ns, const sigset_t *mask)
{
	struct select_args *sa = a;
	if (sa->r)
		*sa->r = sa->r0;
	if (sa->w)
		*sa->w = sa->w0;
	if (sa->x)
		*sa->x = sa->x0;
	struct timespec ts;
	struct {
		const sigset_t *set;
		size_t size;
	} data = {mask, _NSIG / 8};
	return syscall(SYS_pselect6, sa->nfds, sa->r, sa->w, sa->x, real_timespec(ns, &ts), &data);
}

static int vselect(int nfds, fd_set *r, fd_set *w, fd_set *x, int64_t timeout_ns, const sigset_t *mask)
{
	struct select_args a = {.nfds = nfds, .r = r, .w = w, .x = x};
	if (r)
		a.r0 = *r;
	if (w)
		a.w0 = *w;
	if (x)
		a.x0 = *x;
	int ret = (int)vwait(timeout_ns, select_fn, &a, mask, NULL, WAITING);
	if (ret == 0) {
		if (r)
			FD_ZERO(r);
		if (w)
			FD_ZERO(w);
		if (x)
			FD_ZERO(x);
	}
	return ret;
}

EXPORT int select(int nfds, fd_set *r, fd_set *w, fd_set *x, struct timeval *tv)
{
	int64_t ns = tv == NULL ? -1 : (int64_t)tv->tv_sec * NS + (int64_t)tv->tv_usec * 1000;
	int ret = vselect(nfds, r, w, x, ns, NULL);
	if (ret == 0 && tv != NULL)
		tv->tv_sec = tv->tv_usec = 0;
	return ret;
}

EXPORT int pselect(int nfds, fd_set *r, fd_set *w, fd_set *x, const struct timespec *tmo, const sigset_t *sigmask)
{
	return vselect(nfds, r, w, x, timespec_ns(tmo), sigmask);
}

/* Sleeps: a wait for nothing but the clock (ppoll of no file), ended
 * early by a signal of the build's own, as the real one would be. */

static long sleep_fn(void *a, int64_t ns, const sigset_t *mask)
{
	(void)a;
	struct timespec ts;
	return syscall(SYS_ppoll, NULL, 0, real_timespec(ns, &ts), mask, _NSIG / 8);
}

/* vsleep sleeps for ns of virtual time; on an interruption it returns -1
 * with errno EINTR and the virtual time left in *rem. */
static int vsleep(int64_t ns, struct timespec *rem)
{
	struct page *p = page();
	if (p == NULL || kick_signo == 0) {
		struct timespec ts;
		to_timespec(ns, &ts);
		return (int)syscall(SYS_nanosleep, &ts, rem);
	}
	if (ns <= 0)
		return 0;
	int64_t deadline;
	long ret = vwait(ns, sleep_fn, NULL, NULL, &deadline, SLEEPING);
	if (ret == 0)
		return 0;
	if (ret > 0)
		return 0; /* no file to be ready: cannot happen */
	if (rem != NULL && errno == EINTR) {
		int64_t r, m;
		uint64_t s;
		vnow(p, &r, &m, &s);
		to_timespec(deadline > m ? deadline - m : 0, rem);
	}
	return -1;
}

EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
	if (req == NULL || req->tv_nsec < 0 || req->tv_nsec >= NS || req->tv_sec < 0) {
		errno = req == NULL ? EFAULT : EINVAL;
		return -1;
	}
	return vsleep(timespec_ns(req), rem);
}

EXPORT int clock_nanosleep(clockid_t id, int flags, const struct timespec *req, struct timespec *rem)
{
	struct page *p = page();
	if (p == NULL || !(wall_clock(id) || mono_clock(id))) {
		long ret = syscall(SYS_clock_nanosleep, id, flags, req, rem);
		return ret < 0 ? errno : 0;
	}
	if (req == NULL)
		return EFAULT;
	if (req->tv_nsec < 0 || req->tv_nsec >= NS || req->tv_sec < 0)
		return EINVAL;
	int64_t ns = timespec_ns(req);
	if (flags & TIMER_ABSTIME) {
		int64_t now = read_clock(p, id);
		ns = ns > now ? ns - now : 0;
		rem = NULL; /* an absolute sleep has no remainder */
	}
	int saved = errno;
	int ret = vsleep(ns, rem);
	int e = errno;
	errno = saved;
	return ret < 0 ? e : 0;
}

EXPORT int usleep(useconds_t us)
{
	return vsleep((int64_t)us * 1000, NULL);
}

EXPORT unsigned int sleep(unsigned int seconds)
{
	struct timespec rem = {0, 0};
	if (vsleep((int64_t)seconds * NS, &rem) == 0)
		return 0;
	return (unsigned int)rem.tv_sec + (rem.tv_nsec > 0);
}
