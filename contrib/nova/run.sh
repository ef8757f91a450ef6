#!/usr/bin/env bash
# Prove the Nova patch series in contrib/nova/patches with Nova's own tests.
#
# Downloads the Nova 34.0.0 sdist, installs it with its test requirements in
# a venv (cached while the sdist and the requirements are unchanged), unpacks
# a fresh tree, applies the series (failing loudly if it does not apply), and
# runs with stestr:
#   regression   nova/tests/functional/regressions/test_bug_1790204.py
#   new          the series' own functional and unit tests
#   selection    Nova's existing resize, cold migrate and reschedule
#                functional tests named in contrib/nova/selection.txt
#   figures      (with --figures) contrib/nova/test_placement_request_counts.py,
#                which counts the Placement requests per resize, confirm and
#                revert under each strategy, and per cold migration, live
#                migration and evacuation
#   wide, unit-modules
#                (with --full) every resize and migrate functional test of
#                test_servers (the regular expression in WIDE below, with the
#                regression test: 142 tests on Nova 34.0.0), and the whole
#                unit test modules of every file the series touches
# then prints the counts of each group (and the figures), the closing
# "nova: N passed, N failed" line, and exits non-zero on any failure.
#
# Usage: contrib/nova/run.sh [--unpatched] [--figures] [--full]
#                            [--concurrency N]
#   --unpatched     run the same groups on Nova 34.0.0 as released (the
#                   regression test then asserts the bug; the new tests do
#                   not exist; the figures cover the legacy behaviour only)
#   --figures       also count the Placement requests (about 6 more minutes
#                   on two cores: the resizes, then the moves)
#   --full          also run the wide groups (about 25 more minutes on two
#                   cores; not run in CI)
#   --concurrency N stestr workers (default 2)
# Environment: NOVA_WORK_DIR (default <repo>/.tox/nova-work), PYTHON
# (default python3).
set -euo pipefail

NOVA_VERSION=34.0.0
NOVA_SDIST_SHA256=919eef77cda4ce0cc4746a5853b5d9341ebd0ae37bc8b1939eb77d17727c00df
# Installed beside the sdist's test-requirements.txt. Nova's functional
# PlacementFixture runs the real Placement in-process. Without OpenStack's
# upper-constraints pip picks SQLAlchemy 2.1, whose deprecation warnings
# Nova's WarningsFixture turns into errors.
EXTRA_REQUIREMENTS=('openstack-placement>=9.0.0.0b1' 'SQLAlchemy<2.1')

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
WORK=${NOVA_WORK_DIR:-$REPO/.tox/nova-work}
PYTHON=${PYTHON:-python3}
CONCURRENCY=2
MODE=patched
FIGURES_RUN=0
FULL_RUN=0

while [ $# -gt 0 ]; do
    case "$1" in
        --unpatched) MODE=unpatched ;;
        --figures) FIGURES_RUN=1 ;;
        --full) FULL_RUN=1 ;;
        --concurrency) CONCURRENCY=$2; shift ;;
        -h|--help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {print}' "$0"; exit 0 ;;
        *) echo "run.sh: unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done

START=$(date +%s)
log() { printf '[nova %4ss] %s\n' "$(( $(date +%s) - START ))" "$*"; }
mkdir -p "$WORK/sdist"
SDIST=$WORK/sdist/nova-$NOVA_VERSION.tar.gz

# 1. The sdist (not the wheel: the wheel lacks etc/nova/api-paste.ini that
#    the functional tests load).
if [ ! -f "$SDIST" ]; then
    log "downloading the nova==$NOVA_VERSION sdist"
    "$PYTHON" -m pip download --quiet --no-deps --no-binary :all: \
        -d "$WORK/sdist" "nova==$NOVA_VERSION"
fi
actual=$(sha256sum "$SDIST" | cut -d' ' -f1)
if [ "$actual" != "$NOVA_SDIST_SHA256" ]; then
    echo "run.sh: $SDIST has sha256 $actual, expected $NOVA_SDIST_SHA256" >&2
    exit 1
fi

# 2. A fresh tree, patched unless --unpatched.
TREE_ROOT=$WORK/tree-$MODE
rm -rf "$TREE_ROOT"
mkdir -p "$TREE_ROOT"
tar --no-same-owner -xzf "$SDIST" -C "$TREE_ROOT"
TREE=$TREE_ROOT/nova-$NOVA_VERSION
# NOTE: its own (empty) git repository, so that git apply resolves the
# patch paths against the tree and not against an enclosing checkout.
git -C "$TREE" init --quiet
if [ "$MODE" = patched ]; then
    shopt -s nullglob
    patches=("$HERE"/patches/*.patch)
    shopt -u nullglob
    if [ ${#patches[@]} -eq 0 ]; then
        echo "run.sh: no patches in $HERE/patches" >&2
        exit 1
    fi
    for p in "${patches[@]}"; do
        if ! git -C "$TREE" apply --check "$p"; then
            echo "run.sh: $(basename "$p") does not apply to nova $NOVA_VERSION" >&2
            exit 1
        fi
        git -C "$TREE" apply "$p"
        log "applied $(basename "$p")"
    done
fi
cp "$HERE/test_placement_request_counts.py" \
    "$TREE/nova/tests/functional/test_contrib_placement_counts.py"

# 3. The venv, rebuilt only when the sdist, the requirements or the Python
#    change.
VENV=$WORK/venv
stamp=$( { echo "$NOVA_SDIST_SHA256"; printf '%s\n' "${EXTRA_REQUIREMENTS[@]}";
           cat "$TREE/test-requirements.txt"; "$PYTHON" -VV; } | sha256sum | cut -d' ' -f1)
if [ "$(cat "$VENV/.contrib-nova-stamp" 2>/dev/null)" != "$stamp" ]; then
    log "creating the venv in $VENV (a few minutes)"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install --quiet "$SDIST" -r "$TREE/test-requirements.txt" \
        "${EXTRA_REQUIREMENTS[@]}"
    echo "$stamp" > "$VENV/.contrib-nova-stamp"
else
    log "reusing the venv in $VENV"
fi

# 4. The tests, with the environment Nova's tox functional env sets.
export OS_NOVA_DISABLE_EVENTLET_PATCHING=False NOVA_RAISE_ON_GREENLET_LEAK=True
export OS_STDOUT_CAPTURE=1 OS_STDERR_CAPTURE=1 OS_TEST_TIMEOUT=160
export LC_ALL=C.UTF-8 PYTHONDONTWRITEBYTECODE=1
export NOVA_PLACEMENT_COUNTS_FILE=$WORK/counts-$MODE.jsonl
rm -f "$NOVA_PLACEMENT_COUNTS_FILE"

REGRESSION='nova\.tests\.functional\.regressions\.test_bug_1790204\.'
NEW_FUNCTIONAL='nova\.tests\.functional\.test_resize_claim_strategy(_groups)?\.'
# The series' unit test classes, one per patch.
NEW_UNIT='nova\.tests\.unit\.(scheduler\.client\.test_report\.(TestResizeSourceIncrease|TestResizeWithoutRereading)|scheduler\.test_manager\.ResizeSourceIncreaseTestCase|compute\.test_compute_mgr\.SourceIncreaseResizeTestCase|conductor\.tasks\.test_migrate\.ResizeClaimStrategyTestCase)\.'
FIGURES='nova\.tests\.functional\.test_contrib_placement_counts\.'
# --full: Nova's resize and migrate functional tests, and the unit test
# modules of every file the series touches (nova/scheduler/client/report.py,
# nova/scheduler/manager.py, nova/scheduler/utils.py, nova/compute/manager.py,
# nova/compute/utils.py, nova/objects/service.py,
# nova/conductor/tasks/migrate.py).
WIDE='(?i)regressions\.test_bug_1790204|test_servers\..*(resize|migrat)'
UNIT_MODULES='nova\.tests\.unit\.(scheduler\.client\.test_report|scheduler\.test_manager|scheduler\.test_utils|compute\.test_compute_mgr|compute\.test_utils|objects\.test_service|conductor\.tasks\.test_migrate)\.'
mapfile -t SELECTION < <(grep -v '^[[:space:]]*\(#\|$\)' "$HERE/selection.txt")

functional=("$REGRESSION" "${SELECTION[@]}")
if [ "$MODE" = patched ]; then
    functional+=("$NEW_FUNCTIONAL")
fi
if [ "$FIGURES_RUN" = 1 ]; then
    functional+=("$FIGURES")
fi
if [ "$FULL_RUN" = 1 ]; then
    functional+=("$WIDE")
fi
unit=()
if [ "$MODE" = patched ]; then
    unit+=("$NEW_UNIT")
fi
if [ "$FULL_RUN" = 1 ]; then
    unit+=("$UNIT_MODULES")
fi

cd "$TREE"
rc=0
RESULTS=$WORK/results-$MODE
rm -rf "$RESULTS"
mkdir -p "$RESULTS"
run_stestr() {  # name test-path regex...
    local name=$1 path=$2
    shift 2
    log "running the $name tests"
    if ! "$VENV/bin/python" -m stestr --test-path "$path" run \
            --concurrency "$CONCURRENCY" "$@" > "$RESULTS/$name.log" 2>&1; then
        rc=1
        log "some $name tests failed, see $RESULTS/$name.log"
    fi
    "$VENV/bin/python" -m stestr last --subunit 2>/dev/null \
        | "$VENV/bin/subunit2csv" > "$RESULTS/$name.csv" || true
}
run_stestr functional ./nova/tests/functional "${functional[@]}"
if [ ${#unit[@]} -gt 0 ]; then
    run_stestr unit ./nova/tests/unit "${unit[@]}"
fi

# 5. The counts per group, and the figures.
groups=("regression=$REGRESSION" "selection=$(IFS='|'; echo "${SELECTION[*]}")")
if [ "$MODE" = patched ]; then
    groups+=("new-functional=$NEW_FUNCTIONAL" "new-unit=$NEW_UNIT")
fi
if [ "$FIGURES_RUN" = 1 ]; then
    groups+=("figures=$FIGURES")
fi
if [ "$FULL_RUN" = 1 ]; then
    groups+=("wide=$WIDE" "unit-modules=$UNIT_MODULES")
fi
if ! "$VENV/bin/python" "$HERE/report.py" --mode "$MODE" \
        --counts "$NOVA_PLACEMENT_COUNTS_FILE" "$RESULTS"/*.csv -- "${groups[@]}"; then
    rc=1
fi
log "nova $NOVA_VERSION ($MODE): done in $(( $(date +%s) - START ))s, exit $rc"
exit $rc
