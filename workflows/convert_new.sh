#!/bin/bash
# Scheduled conversion: convert whatever is new or changed in a repository since the last run.
#
#   workflows/convert_new.sh REPOSITORY OUTPUT_DIR [extra mzpeak-dask batch options]
#
# Run it from cron or a systemd timer (see mzpeak-convert.service / mzpeak-convert.timer):
#   15 2 * * *  /opt/mzpeak_dask/workflows/convert_new.sh /data/repository /data/mzpeak
# Every run is a `mzpeak-dask batch --resume`: inputs whose archive exists, validates and was
# made from the same input are skipped; new and changed inputs are converted. Runs never
# overlap: `mzpeak-dask batch` itself locks OUTPUT_DIR (flock on OUTPUT_DIR/.mzpeak-batch.lock,
# released when its process ends, however it ends) and exits with status 75 while another batch,
# scheduled or started by hand, holds it; this run is then logged as skipped. Each run's output
# is appended to OUTPUT_DIR/logs/convert_new.log and the exit status is non-zero when an input
# failed (cron mails it, systemd marks the unit).
set -uo pipefail

REPOSITORY=${1:?usage: convert_new.sh REPOSITORY OUTPUT_DIR [batch options]}
OUTPUT=${2:?usage: convert_new.sh REPOSITORY OUTPUT_DIR [batch options]}
shift 2
MZPEAK_DASK=${MZPEAK_DASK:-mzpeak-dask}

BUSY=75  # mzpeak-dask batch: another batch holds OUTPUT_DIR

mkdir -p "$OUTPUT/logs"
{
    echo "$(date -u +%FT%TZ) converting new inputs of $REPOSITORY"
    $MZPEAK_DASK batch "$REPOSITORY" "$OUTPUT" --resume "$@"
    status=$?
    if [ "$status" = "$BUSY" ]; then
        echo "$(date -u +%FT%TZ) another batch is still converting into $OUTPUT; skipped"
    else
        echo "$(date -u +%FT%TZ) finished with status $status"
    fi
} >>"$OUTPUT/logs/convert_new.log" 2>&1
if [ "${status:-1}" = "$BUSY" ]; then
    exit 0
fi
exit ${status:-1}
