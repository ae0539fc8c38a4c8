#!/usr/bin/env bash
# steps.sh STEP...: runs `make STEP` for each step in turn (a step may carry
# variables: "image-reproducible IMAGE_PLATFORMS=amd64"), stops at the
# first that fails, and prints how long each took: `make test` uses it, so
# CI's log shows where its budget goes.
set -uo pipefail
MAKE=${MAKE:-make}
declare -a names times
status=0
for step in "$@"; do
	start=$(date +%s)
	# shellcheck disable=SC2086 # a step is make's words
	$MAKE --no-print-directory $step
	status=$?
	names+=("$step")
	times+=($(($(date +%s) - start)))
	[ "$status" -eq 0 ] || break
done
total=0
echo "make test: time per step"
for i in "${!names[@]}"; do
	printf '  %6ds  %s\n' "${times[$i]}" "${names[$i]}"
	total=$((total + times[i]))
done
printf '  %6ds  in all%s\n' "$total" "$([ "$status" -eq 0 ] || echo ", stopped at a failure")"
exit "$status"
