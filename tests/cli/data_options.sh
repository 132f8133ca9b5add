#!/usr/bin/env bash
# Data options end to end, each checked by an effect a run that ignored it would not have:
#   Cache memory / file: once epoch 2 has begun, the training images are deleted (the run is
#     stopped with SIGSTOP meanwhile); the run must still complete, as it reads no image file
#     after epoch 1. Cache none, the control, must then fail naming a missing file.
#   LoaderThreads, DispatchInBackground: the process's threads by name (/proc/PID/task/*/comm):
#     while it is stopped, LoaderThreads N has exactly N decoding threads (dlt-decode-K); the
#     producer thread (dlt-batches, alive while it fills an epoch's queue) is seen while the run
#     trains with DispatchInBackground true and never with false.
#   IncludeSubfolders true lists images below the class folders at any depth; false looks only
#     directly in the folder given (MATLAB's imageDatastore), where a class-folder tree has none.
#   FileExtensions [.png]: files with other extensions are not listed (by default they are).
#   Augmentation.FillValue of neither one value nor one per channel is refused in one line; it,
#     ResetInputNormalization false and BatchNormalizationStatistics population where the run
#     does not use them each get one warning line.
source "$(dirname "$0")/common.sh" "$@"
"$DLTRAIN" make-dataset shapes "$TMP/data" --classes 2 --per-class 60 --size 16x16 --seed 3 > /dev/null
cat > "$TMP/net.yaml" <<YAML
layers:
  - {type: imageInput, Name: input, InputSize: [16, 16, 3], Normalization: none}
  - {type: convolution2d, Name: conv, FilterSize: 3, NumFilters: 4, Padding: same}
  - {type: relu, Name: relu}
  - {type: fullyConnected, Name: fc, OutputSize: 2}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
training: {Solver: sgdm, InitialLearnRate: 0.01, MaxEpochs: 40, MiniBatchSize: 8, Verbose: false, ExecutionEnvironment: cpu, Seed: 1}
YAML
# paused_run NAME DELETE [--set ...]: trains a copy of the data into $TMP/NAME; once log.csv has
# a row of epoch 2 the run is stopped (SIGSTOP), its threads' names read ($thread_names), the copy's
# images deleted when DELETE is 1, and continued; $rc is its exit code. A run that ended before
# it could be stopped is run again (3 tries; a loaded machine may stall this shell).
paused_run() {
  local name=$1 delete=$2 attempt pid
  shift 2
  for attempt in 1 2 3; do
    rm -rf "$TMP/$name" "$TMP/$name-data"
    cp -r "$TMP/data/train" "$TMP/$name-data"
    "$DLTRAIN" train "$TMP/net.yaml" --quiet --threads 1 --output-dir "$TMP/$name" \
      --set data.train="$TMP/$name-data" "$@" > "$TMP/$name.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 30000); do  # a hang guard of 300 s
      awk -F, 'NR > 1 && $1 >= 2 { found = 1 } END { exit !found }' "$TMP/$name/log.csv" 2> /dev/null && break
      kill -0 $pid 2> /dev/null || break
      sleep 0.01
    done
    if kill -STOP $pid 2> /dev/null && [[ ! -e $TMP/$name/summary.json ]]; then
      thread_names=$(cat /proc/$pid/task/*/comm)
      [[ $delete == 1 ]] && find "$TMP/$name-data" -name '*.png' -delete
      kill -CONT $pid
      rc=0
      wait $pid || rc=$?
      return 0
    fi
    kill -CONT $pid 2> /dev/null || true
    wait $pid || true
    echo "  $name: the run ended before it could be stopped (attempt $attempt); again"
  done
  fail "$name: every run ended before it could be stopped"
}

for cache in memory file; do
  paused_run "cache-$cache" 1 --set data.Cache=$cache
  ((rc == 0)) || fail "Cache $cache: the run read images after epoch 1 (exit $rc): $(cat "$TMP/cache-$cache.log")"
  rows=$(($(wc -l < "$TMP/cache-$cache/log.csv") - 1))
  echo "ok: Cache $cache: images deleted in epoch 2, the run completed ($rows iterations)"
done
paused_run cache-none 1 --set data.Cache=none
((rc == 1)) || fail "Cache none: exit $rc after its images were deleted, expected 1: $(cat "$TMP/cache-none.log")"
grep -q "cache-none-data/.*\.png" "$TMP/cache-none.log" || fail "Cache none: the error names no image: $(cat "$TMP/cache-none.log")"
echo "ok: Cache none (the control): $(grep error "$TMP/cache-none.log" | head -1 | cut -c1-160)"

for n in 2 4; do
  paused_run threads-$n 0 --set data.LoaderThreads=$n
  decoders=$(grep -c '^dlt-decode-' <<< "$thread_names" || true)
  ((decoders == n)) || fail "LoaderThreads $n: $decoders decoding threads: $(tr '\n' ' ' <<< "$thread_names")"
  echo "ok: LoaderThreads $n: $decoders decoding threads"
done

# producer_seen NAME [--set ...]: trains (40 short epochs) while reading the threads' names every
# 5 ms; $seen is 1 once a dlt-batches thread was seen (the run is then let finish), else 0.
producer_seen() {
  local name=$1 pid
  shift
  seen=0
  rm -rf "$TMP/$name"  # a retry trains afresh
  "$DLTRAIN" train "$TMP/net.yaml" --quiet --threads 1 --output-dir "$TMP/$name" --set data.train="$TMP/data/train" \
    "$@" > "$TMP/$name.log" 2>&1 &
  pid=$!
  while kill -0 $pid 2> /dev/null; do
    if cat /proc/$pid/task/*/comm 2> /dev/null | grep -q '^dlt-batches$'; then
      seen=1
      break
    fi
    sleep 0.005
  done
  wait $pid || fail "$name: training failed: $(cat "$TMP/$name.log")"
}
for attempt in 1 2 3; do  # a loaded machine may stall this shell through every epoch's start
  producer_seen producer-bg
  ((seen == 1)) && break
done
((seen == 1)) || fail "DispatchInBackground true: no dlt-batches thread seen in 3 runs"
echo "ok: DispatchInBackground true: the producer thread dlt-batches is seen"
producer_seen producer-fg --set training.DispatchInBackground=false
((seen == 0)) || fail "DispatchInBackground false: a dlt-batches thread ran"
echo "ok: DispatchInBackground false: no producer thread in the whole run"

# listed_images NAME [--set ...]: the image count of a one-epoch run's "training on ... with N images"
listed_images() {
  local name=$1
  shift
  "$DLTRAIN" train "$TMP/net.yaml" --threads 1 --output-dir "$TMP/$name" --set training.MaxEpochs=1 "$@" \
    > "$TMP/$name.log" 2>&1 || fail "$name: $(cat "$TMP/$name.log")"
  sed -n 's/.*training on [^ ]* with \([0-9]*\) images.*/\1/p' "$TMP/$name.log"
}
cp -r "$TMP/data/train" "$TMP/nested"
mkdir -p "$TMP/nested/circle/more" "$TMP/nested/square/more"
for c in circle square; do
  find "$TMP/nested/$c" -maxdepth 1 -name '*.png' | head -10 | xargs -I{} mv {} "$TMP/nested/$c/more/"
done
all=$(find "$TMP/nested" -name '*.png' | wc -l)
top=$(find "$TMP/nested" -mindepth 2 -maxdepth 2 -name '*.png' | wc -l)
with=$(listed_images sub-true --set data.train="$TMP/nested")
echo "IncludeSubfolders true lists $with images (of $all, $((all - top)) of them one folder below a class folder)"
[[ $with == "$all" ]] || fail "IncludeSubfolders true: $with images, expected $all"
expect_error "IncludeSubfolders false (images only directly in the folder)" 1 "no images found .*directly in it" -- \
  "$DLTRAIN" train "$TMP/net.yaml" --output-dir "$TMP/sub-false" --set data.train="$TMP/nested" \
  --set data.IncludeSubfolders=false
cp -r "$TMP/data/train" "$TMP/ext"
for f in $(find "$TMP/ext" -name '*.png' | head -6); do cp "$f" "${f%.png}.bmp"; done  # PNG bytes: decodable
n_png=$(find "$TMP/ext" -name '*.png' | wc -l)
n_all=$(find "$TMP/ext" -type f | wc -l)
every=$(listed_images ext-all --set data.train="$TMP/ext")
png=$(listed_images ext-png --set data.train="$TMP/ext" --set "data.FileExtensions=[.png]")
echo "FileExtensions: default lists $every (of $n_all files), [.png] $png (of $n_png .png files)"
[[ $every == "$n_all" && $png == "$n_png" ]] || fail "FileExtensions: $every / $png, expected $n_all / $n_png"
expect_error "Augmentation.FillValue of 2 values for 3 channels" 2 "FillValue has 2 values but the images have 3 channels" -- \
  "$DLTRAIN" train "$TMP/net.yaml" --output-dir "$TMP/fill" --set data.train="$TMP/data/train" \
  --set "data.Augmentation.FillValue=[1,2]" --set data.Augmentation.RandRotation=[-10,10]
# Options written that the run does not use: one warning line each, and the run trains.
"$DLTRAIN" train "$TMP/net.yaml" --output-dir "$TMP/unused" --set data.train="$TMP/data/train" \
  --set training.MaxEpochs=1 --set data.Augmentation.FillValue=128 --set training.ResetInputNormalization=false \
  --set training.BatchNormalizationStatistics=population > "$TMP/unused.log" 2>&1 ||
  fail "the run with unused options failed: $(cat "$TMP/unused.log")"
for w in "data.Augmentation.FillValue has no effect: no augmentation" \
  "training.ResetInputNormalization false has no effect: the imageInput has no statistics to keep" \
  "training.BatchNormalizationStatistics population has no effect: the network has no batch normalization"; do
  [[ $(grep -c "warning: .*$w" "$TMP/unused.log") == 1 ]] || fail "no single warning '$w': $(cat "$TMP/unused.log")"
done
echo "ok: FillValue, ResetInputNormalization and BatchNormalizationStatistics unused: a warning each"
echo "data options: ok"
