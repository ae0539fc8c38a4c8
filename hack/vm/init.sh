#!/bin/busybox sh
# init.sh: /init of the test VM's initramfs (hack/vm/run.sh packs it). It
# mounts what the eBPF tests use, loads the modules they need, runs each
# package's compiled tests in /tests/order from its own directory and
# reports on the serial console, then powers off. run.sh reads the
# PROBELET-VM lines; everything else is the tests' -test.v output.
/bin/busybox --install -s /bin
# iproute2's ip and util-linux's setpriv come first: busybox's lack
# `ip netns` and setpriv --bounding-set.
export PATH=/usr/bin:/usr/sbin:/bin
export HOME=/tmp TMPDIR=/tmp GOTRACEBACK=all
# The tests fail rather than skip what they cannot do (ebpftest.RequireRoot).
export CI=true

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t bpf bpf /sys/fs/bpf
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing
# AppArmor's interface, and the cgroups runc puts the AppArmor test's
# containers in.
mount -t securityfs securityfs /sys/kernel/security
mount -t cgroup2 cgroup2 /sys/fs/cgroup
ip link set lo up
for m in $(cat /lib/modules/order); do
	insmod "/lib/modules/$m" || echo "PROBELET-VM WARN insmod $m failed"
done

# The serial console prefixes the first line with terminal escapes.
echo
echo "PROBELET-VM KERNEL $(uname -r)"
run=$(cat /tests/run 2>/dev/null || true)
for pkg in $(cat /tests/order); do
	echo "PROBELET-VM RUN $pkg"
	start=$(date +%s)
	if (cd "/tests/$pkg" && ./pkg.test -test.v -test.count=1 -test.timeout="$(cat /tests/timeout)" ${run:+"-test.run=$run"}); then
		result=PASS
	else
		result=FAIL
	fi
	echo "PROBELET-VM RESULT $pkg $result $(($(date +%s) - start))s"
done
echo "PROBELET-VM DONE"
poweroff -f
