#!/usr/bin/env bash
# The EfficientNet backbone through OpenCV DNN, as the node loads it (the
# project's graph rewrites and layers: ttm backbone --check --profile,
# median of FRAMES frames after one warm-up), against ONNX Runtime 1.30's
# CPU provider (ort.mjs: median of FRAMES frames after 3 warm-ups), on the same
# ONNX files with the same thread count: seeded B0 at 224 (TF SAME
# padding) and B3 at 300 (Keras padding). Each side runs ROUNDS times,
# alternately (ours, ORT, ours, ORT, ...); the table keeps each side's
# best. Then ours' per-layer-type profile of its best round, per backbone.
#
#   bench/backbone/run.sh              or: make bench-backbone
#   THREADS=1 ROUNDS=5 bench/backbone/run.sh
#
# Needs Go and OpenCV to build bin/ttm (make setup), Node.js and npm.
# Files go to bin/bench/backbone. About 1-2 minutes on two cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-3}
FRAMES=${FRAMES:-20}
OUT=bin/bench/backbone
mkdir -p "$OUT"
LOG=$OUT/ttm.log
: >"$LOG"
load=$(cut -d' ' -f1 /proc/loadavg) # before we add ours: other work on the machine skews both sides

command -v go >/dev/null || export PATH=$PATH:/usr/local/go/bin
GONOSUMDB=github.com/bluenviron go build -o bin/ttm ./cmd/ttm # a no-op when bin/ttm is up to date
if [ ! -d bench/backbone/node_modules ]; then
	# The CPU provider ships in the package; skip its postinstall's CUDA download.
	(cd bench/backbone && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund)
fi

# best OLD NEW: the lower of two timings (OLD may be empty); fails on an empty NEW.
best() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == "") { print "no timing" > "/dev/stderr"; exit 1 }; print ((a == "" || b + 0 < a + 0) ? b : a) }'; }

# bench ID LABEL SIZE GENERATE-FLAGS...: one table row; ours' best profile goes to $OUT/ID.profile.
bench() {
	local id=$1 label=$2 size=$3 file=$OUT/$1.onnx ours="" ort="" out ms i
	shift 3
	bin/ttm backbone "$@" --seed 1 --out "$file" >/dev/null 2>>"$LOG"
	for ((i = 0; i < ROUNDS; i++)); do
		out=$(bin/ttm backbone --check "$file" --size "$size" --threads "$THREADS" --profile --frames "$FRAMES" 2>>"$LOG")
		if ! grep -q "ms per frame (median of $FRAMES frames, $THREADS OpenCV threads)" <<<"$out"; then
			echo "ours did not run on $THREADS threads:" >&2; echo "$out" >&2; exit 1
		fi
		ms=$(awk '/ms per frame/ { print $1 }' <<<"$out")
		if [ "$(best "$ours" "$ms")" != "$ours" ]; then
			ours=$ms
			sed -n '/^last frame by layer type/,$p' <<<"$out" >"$OUT/$id.profile"
		fi
		ms=$(node bench/backbone/ort.mjs "$file" "$THREADS" "$FRAMES" | awk '$1 == "ort_ms_median" { print $2 }')
		ort=$(best "$ort" "$ms")
	done
	printf '| %s | %s ms | %s ms | %.2f |\n' "$label" "$ours" "$ort" "$(awk -v a="$ours" -v b="$ort" 'BEGIN { print a / b }')"
}

echo "| backbone | ours (OpenCV DNN + project layers) | ONNX Runtime 1.30 CPU | ours / ORT |"
echo "|---|---|---|---|"
bench b0-224 "EfficientNet-B0, 224, SAME padding" 224 --variant b0 --padding same
bench b3-300 "EfficientNet-B3, 300, Keras padding" 300 --variant b3
echo
cores=$(lscpu -p=CORE,SOCKET | grep -v '^#' | sort -u | wc -l)
cpu=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
echo "CPU: $cpu, $cores cores; $THREADS threads per side; best of $ROUNDS alternating rounds, each the median of $FRAMES frames; load average $load at the start."
for id in b0-224 b3-300; do
	echo
	echo "ours, $id: $(cat "$OUT/$id.profile")"
done
