#!/bin/bash
# Scheduled conversion: convert whatever is new or changed in a repository since the last run.
#
#   workflows/convert_new.sh REPOSITORY OUTPUT_DIR [extra mzpeak-dask batch options]
#
# Run it from cron or a systemd timer (see mzpeak-convert.service / mzpeak-convert.timer):
#   15 2 * * *  /opt/mzpeak_dask/workflows/convert_new.sh /data/repository /data/mzpeak
# Every run is a `mzpeak-dask batch --resume`: inputs whose archive exists, validates and was
# made from the same input are skipped; new and changed inputs are converted. A lock keeps two
# runs from overlapping; each run's output is appended to OUTPUT_DIR/logs/convert_new.log and
# the exit status is non-zero when an input failed (cron mails it, systemd marks the unit).
set -uo pipefail

REPOSITORY=${1:?usage: convert_new.sh REPOSITORY OUTPUT_DIR [batch options]}
OUTPUT=${2:?usage: convert_new.sh REPOSITORY OUTPUT_DIR [batch options]}
shift 2
MZPEAK_DASK=${MZPEAK_DASK:-mzpeak-dask}

mkdir -p "$OUTPUT/logs"
exec 9>"$OUTPUT/logs/.lock"
if ! flock -n 9; then
    echo "$(date -u +%FT%TZ) another conversion is still running; skipped" >>"$OUTPUT/logs/convert_new.log"
    exit 0
fi
{
    echo "$(date -u +%FT%TZ) converting new inputs of $REPOSITORY"
    $MZPEAK_DASK batch "$REPOSITORY" "$OUTPUT" --resume "$@"
    status=$?
    echo "$(date -u +%FT%TZ) finished with status $status"
} >>"$OUTPUT/logs/convert_new.log" 2>&1
exit ${status:-1}
