#!/usr/bin/env bash
# Regenerate the committed PATE sweep reports
# (benchmarks/results/{eps_sweep,dd_sweep,paper_synthetic,semi_sweep,query_sweep}_{replace,add_remove},
# semi_cnn_replace, teacher_sweep_replace, person_sweep_replace and DP-SGD's two probe inputs under each relation,
# dpsgd_{unit_norm,inputs}_{replace,add_remove}) from one clean commit, one sweep at a time (two torch processes on
# 2 cores slow each other ~10x).
#   benchmarks/pate_reports.sh            # all seventeen reports: hours on the 2-core VM (each sweep's time is printed)
#   benchmarks/pate_reports.sh eps_sweep  # only the sweeps whose name starts with the argument
# Each sweep writes into logs/reports/<name>/; when all have finished, their report.md, results.csv and plots are
# copied into benchmarks/results/<name>/ (not before: a copy dirties the tree, and the next sweep's jobs would
# record a -dirty version). Refuses a dirty working tree: a committed report names exactly one commit.
# Resumes: run it again after an interruption (a session's end, a node's) and a sweep whose report.md names this
# commit is kept, not rerun; an interrupted sweep (its directory without a report.md) is moved aside to
# logs/reports/<name>.interrupted-<UTC time> and run again, its finished stages read from the artifact cache.
#   LAND_DIR=/outside/the/tree benchmarks/pate_reports.sh   # also copy each sweep's report there as soon as it
# ends, so that a session's end (which takes logs/ and the cache with it) keeps every sweep already finished.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
only=${1:-}
if [ -n "${LAND_DIR:-}" ]; then
    case "$(realpath -m "$LAND_DIR")/" in "$(pwd -P)"/*)
        echo "pate_reports.sh: LAND_DIR=$LAND_DIR is inside the working tree; a copy there would dirty it for the" \
             "next sweep: name a folder outside it" >&2
        exit 1 ;;
    esac
fi

if [ -n "$(git status --porcelain)" ]; then
    echo "pate_reports.sh: the working tree has uncommitted changes; commit or stash them first, so that" \
         "every job of a committed report runs the same commit" >&2
    exit 1
fi
commit=$(git rev-parse --short=12 HEAD)

sweep() {  # name, then the train.py overrides
    local name=$1; shift
    case $name in "$only"*) ;; *) return 0 ;; esac
    local out=logs/reports/$name
    if [ -e "$out/report.md" ]; then
        # the report's "Versions: git <commits>" line lists every commit its jobs ran; only this one is kept
        if grep -Eq "^- Versions: git $commit[;.]" "$out/report.md"; then
            echo "== $name: finished at $commit already ($out/report.md); kept"
            finished "$name"
            return 0
        fi
        echo "pate_reports.sh: $out holds a report of another commit ($(grep -m1 '^- Versions:' "$out/report.md"));" \
             "move it away to regenerate $name at $commit" >&2
        exit 1
    fi
    if [ -e "$out" ]; then
        local aside
        aside=$out.interrupted-$(date -u +%Y%m%dT%H%M%SZ)
        mv "$out" "$aside"
        echo "== $name: $out has no report.md (an interrupted sweep): moved to $aside; running it again, its" \
             "finished stages from the cache"
    fi
    echo "== $name ($commit): python train.py -m $* hydra.sweep.dir=$out"
    local started=$SECONDS
    "$PY" train.py -m "$@" hydra.sweep.dir="$out"
    echo "== $name: $(( (SECONDS - started) / 60 )) min $(( (SECONDS - started) % 60 )) s"
    finished "$name"
}
done_sweeps=()

copy_report() {  # name, folder: the sweep's report, its table and its plots, replacing what the folder held
    local out=logs/reports/$1
    mkdir -p "$2"
    rm -f "$2"/*
    cp "$out"/report.md "$out"/results.csv "$out"/*.png "$2/"
    echo "copied $out -> $2"
}

finished() {  # a sweep ended or was kept: copied into the tree once all have ended, out of it now with LAND_DIR
    done_sweeps+=("$1")
    [ -z "${LAND_DIR:-}" ] || copy_report "$1" "$LAND_DIR/$1"
}

sweep eps_sweep_replace experiment=eps_sweep privacy.neighbors=replace
sweep eps_sweep_add_remove experiment=eps_sweep privacy.neighbors=add_remove
sweep dd_sweep_replace experiment=dd_sweep privacy.neighbors=replace
sweep dd_sweep_add_remove experiment=dd_sweep privacy.neighbors=add_remove
sweep paper_synthetic_replace experiment=paper_synthetic references=true seed=0,1,2 privacy.target_epsilon=null,8 \
    privacy.neighbors=replace
sweep paper_synthetic_add_remove experiment=paper_synthetic references=true seed=0,1,2 privacy.target_epsilon=null,8 \
    privacy.neighbors=add_remove
sweep semi_sweep_replace experiment=semi_sweep privacy.neighbors=replace
sweep semi_sweep_add_remove experiment=semi_sweep privacy.neighbors=add_remove
sweep semi_cnn_replace experiment=semi_cnn privacy.neighbors=replace
sweep query_sweep_replace experiment=query_sweep privacy.neighbors=replace
sweep query_sweep_add_remove experiment=query_sweep privacy.neighbors=add_remove
sweep teacher_sweep_replace experiment=teacher_sweep privacy.neighbors=replace
sweep person_sweep_replace experiment=person_sweep privacy.neighbors=replace
# the measured basis of DP-SGD's probe_recipes (benchmarks/results/levers.md): each recipe at every epsilon under
# each relation, seed 0; the standardized grid's settings are the recipe's, so from its switch up it shares
# eps_sweep's trainings (seed 0)
for relation in replace add_remove; do
    dpsgd_grid=(method=dp_sgd 'method.probe_recipes=[]' privacy.target_epsilon=0.5,1,2,4,8,16,64 seed=0
                privacy.neighbors=$relation progress=false)
    sweep "dpsgd_unit_norm_$relation" "${dpsgd_grid[@]}"
    sweep "dpsgd_inputs_$relation" "${dpsgd_grid[@]}" method.inputs=standardized method.momentum=0.0 method.epochs=30
done

for name in "${done_sweeps[@]}"; do
    copy_report "$name" "benchmarks/results/$name"
done
