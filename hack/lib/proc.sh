# shellcheck shell=bash
# proc.sh: the processes the scripts start, found and stopped by their PID
# files only, never by a broad name. internal/testbed/harness reads them by
# the same rules. Needs log.sh.

# alive PID: whether PID runs; a zombie has exited (PID 1 here may reap late).
alive() {
	local stat
	read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
	stat=${stat##*) }
	[ "${stat%% *}" != Z ]
}

# wait_gone PID SECONDS: waits until PID has exited.
wait_gone() {
	for _ in $(seq 1 $(($2 * 10))); do
		alive "$1" || return 0
		sleep 0.1
	done
	return 1
}

# pid_of PIDFILE ARG: the PID in PIDFILE if that process runs and its
# command line has the exact argument ARG (so a reused PID is not ours).
pid_of() {
	local pid
	pid=$(cat "$1" 2>/dev/null) || return 1
	[ -n "$pid" ] && alive "$pid" || return 1
	tr '\0' '\n' 2>/dev/null <"/proc/$pid/cmdline" | grep -qxF -- "$2" || return 1
	printf '%s\n' "$pid"
}

# stop_pid PIDFILE ARG NAME: SIGTERM to the process pid_of finds, SIGKILL
# after 10 s; nothing when it is not running. Fails when it survives
# SIGKILL for 5 s.
stop_pid() {
	local pid
	pid=$(pid_of "$1" "$2") || return 0
	kill -TERM "$pid" 2>/dev/null || true
	wait_gone "$pid" 10 && return 0
	log "$3 ($pid) ignored SIGTERM; killing it"
	kill -KILL "$pid" 2>/dev/null || true
	wait_gone "$pid" 5 && return 0
	log "$3 ($pid) survived SIGKILL"
	return 1
}
