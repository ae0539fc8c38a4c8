# shellcheck shell=sh
# ci_set: the one CI policy (internal/testutil.CISet is the same rule for
# Go tests): CI set to anything but "", "false" or "0", in any case, demands
# that every test runs; a missing prerequisite is then a failure, not a skip.
ci_set() {
	case "$(printf '%s' "${CI:-}" | tr -d '[:space:]' | tr '[:upper:]' '[:lower:]')" in
	'' | false | 0) return 1 ;;
	*) return 0 ;;
	esac
}
