#!/usr/bin/env bash
# The gate step: `harness diff --baseline FILE@BASE --candidate FILE@HEAD`, then `harness run` over any extra
# targets. A failing diff does not fail this step: its exit code goes to the outputs, so the summary, the upload
# and the comment still happen, and the action's last step fails with it. Only a gate that cannot start (no
# revisions, no target file, a report folder holding an older run's files) fails here, in one line.
#
# Environment: TARGET_FILE, BASELINE, CANDIDATE, SCENARIOS and EXTRA_TARGETS (one per line), REPORT_DIR,
# HARNESS and HARNESS_PYTHON (the install step's outputs), and the runner's GITHUB_EVENT_PATH and GITHUB_OUTPUT.
# Outputs: result (pass or fail, always), and once the diff has run: exit-code and report-dir.
set -uo pipefail

HARNESS=${HARNESS:-harness}
HARNESS_PYTHON=${HARNESS_PYTHON:-python3}
result=fail
exit_code=

write_outputs() {
  {
    echo "result=$result"
    if [ -n "$exit_code" ]; then
      echo "exit-code=$exit_code"
      echo "report-dir=$REPORT_DIR"
    fi
  } >> "${GITHUB_OUTPUT:-/dev/null}"
}
trap write_outputs EXIT

fail() {
  echo "::error::harness gate: $*"
  exit 2
}

# The non-blank lines of $1, trimmed, one per line of output.
lines() {
  local line
  while IFS= read -r line || [ -n "$line" ]; do
    line="${line#"${line%%[![:space:]]*}"}"
    line="${line%"${line##*[![:space:]]}"}"
    [ -z "$line" ] || printf '%s\n' "$line"
  done <<< "$1"
}

# "BASE HEAD" from the event: a pull request's base and head shas, or a push's before and after; "-" for none
# (a push that creates a branch has an all-zero `before`).
event_revisions() {
  if [ -z "${GITHUB_EVENT_PATH:-}" ] || [ ! -f "$GITHUB_EVENT_PATH" ]; then
    echo "- -"
    return 0
  fi
  "$HARNESS_PYTHON" - "$GITHUB_EVENT_PATH" <<'PY'
import json, sys
try:
    with open(sys.argv[1], encoding="utf-8") as f:
        event = json.load(f)
except (OSError, ValueError) as exc:
    sys.exit(f"::error::harness gate: cannot read the event {sys.argv[1]}: {exc}")
def sha(value):
    ok = isinstance(value, str) and value.strip("0") != "" and value.isalnum()
    return value if ok else "-"
pull = event.get("pull_request") if isinstance(event, dict) else None
if isinstance(pull, dict):
    print(sha((pull.get("base") or {}).get("sha")), sha((pull.get("head") or {}).get("sha")))
elif isinstance(event, dict):
    print(sha(event.get("before")), sha(event.get("after")))
else:
    print("- -")
PY
}

# The revision must be in the clone the target file lies in: a missing sha is fetched once from origin.
ensure_revision() {
  local role=$1 rev=$2 repo
  case "$rev" in -*) fail "the $role revision '$rev' is not a revision" ;; esac
  repo=$(dirname -- "$TARGET_FILE")
  git -C "$repo" rev-parse --git-dir > /dev/null 2>&1 || return 0  # not a clone: the harness says what is wrong
  git -C "$repo" rev-parse --verify --quiet "$rev^{commit}" > /dev/null && return 0
  if [[ $rev =~ ^[0-9a-f]{40}([0-9a-f]{24})?$ ]]; then
    echo "harness gate: the $role revision $rev is not in this clone; fetching it from origin"
    git -C "$repo" fetch --no-tags --quiet origin "$rev" &&
      git -C "$repo" rev-parse --verify --quiet "$rev^{commit}" > /dev/null && return 0
  fi
  fail "the $role revision $rev is not in this clone and could not be fetched (check out with fetch-depth: 0)"
}

[ -n "${TARGET_FILE:-}" ] || fail "target-file is empty: name a target file with repo: (examples/minimal-agent/at-revision.yaml is one)"
[ -f "$TARGET_FILE" ] || fail "target-file $TARGET_FILE: no such file in $PWD"
[ -n "${REPORT_DIR:-}" ] || fail "report-dir is empty: name a folder for the reports"
if [ -e "$REPORT_DIR" ] && [ -n "$(ls -A -- "$REPORT_DIR" 2> /dev/null)" ]; then
  fail "report-dir $REPORT_DIR is not empty: an older run's reports there would pass for this one's (remove it, or name another folder)"
fi

BASELINE=${BASELINE:-}
CANDIDATE=${CANDIDATE:-}
if [ -z "$BASELINE" ] || [ -z "$CANDIDATE" ]; then
  event=$(event_revisions) || exit 2
  read -r event_base event_head <<< "$event"
  [ -n "$BASELINE" ] || [ "$event_base" = - ] || BASELINE=$event_base
  [ -n "$CANDIDATE" ] || [ "$event_head" = - ] || CANDIDATE=$event_head
fi
for role in baseline candidate; do
  rev=$BASELINE
  [ $role = baseline ] || rev=$CANDIDATE
  [ -n "$rev" ] || fail "no $role revision: the $role input is empty and the event (${GITHUB_EVENT_NAME:-none}) names none (a pull request's base and head shas, a push's before and after)"
  ensure_revision $role "$rev"
done

scenarios=()
while IFS= read -r path; do scenarios+=("$path"); done < <(lines "${SCENARIOS:-}")
extra=()
while IFS= read -r target; do extra+=(--target "$target"); done < <(lines "${EXTRA_TARGETS:-}")

command=("$HARNESS" diff --baseline "$TARGET_FILE@$BASELINE" --candidate "$TARGET_FILE@$CANDIDATE"
         --report-dir "$REPORT_DIR" ${scenarios[@]+"${scenarios[@]}"})
echo "harness gate: $(printf '%q ' "${command[@]}")"
"${command[@]}"
exit_code=$?

if [ ${#extra[@]} -gt 0 ]; then
  command=("$HARNESS" run "${extra[@]}" --report-dir "$REPORT_DIR/extra-targets" ${scenarios[@]+"${scenarios[@]}"})
  echo "harness gate: $(printf '%q ' "${command[@]}")"
  "${command[@]}"
  run_code=$?
  [ "$exit_code" != 0 ] || exit_code=$run_code
fi

[ "$exit_code" != 0 ] || result=pass
exit 0
