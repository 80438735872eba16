#!/usr/bin/env bash
# host-check.sh — checks a Linux host for running coresearch (thread per core,
# glommio/io_uring, mmap page store) and prints one OK / WARN / FAIL / INFO line
# per check, with the fix for every WARN and FAIL.
#
#   tuning/host-check.sh [DATA_DIR] [--strict]
#
# DATA_DIR (default: current directory) is where --db-path will live; its
# filesystem, mount options and disk scheduler are checked.
# Exit status: 1 if any FAIL (or any WARN with --strict), else 0.
# Plain bash + coreutils + /proc + /sys; no root needed (fixes may need it).
set -uo pipefail

# Recommended minimums (named here so the README and this script agree).
KERNEL_MAJOR_MIN=5
KERNEL_MINOR_MIN=8              # glommio needs io_uring features of Linux 5.8
MEMLOCK_KIB_MIN=524288          # 512 MiB of lockable memory for io_uring buffers
NOFILE_MIN=65536                # connections + shard files + update files
SWAPPINESS_MAX=10
SOMAXCONN_MIN=4096
SYN_BACKLOG_MIN=4096
MAX_MAP_COUNT_MIN=262144        # mmap'd shard files and their remaps
LOCAL_PORTS_MIN=28000           # outgoing connections (network, export, webhooks)

STRICT=0
DATA_DIR="."
for argument in "$@"; do
    case "$argument" in
        --strict) STRICT=1 ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) DATA_DIR="$argument" ;;
    esac
done

WARNINGS=0
FAILURES=0
ok()   { printf 'OK    %-22s %s\n' "$1" "$2"; }
info() { printf 'INFO  %-22s %s\n' "$1" "$2"; }
warn() { printf 'WARN  %-22s %s\n      fix: %s\n' "$1" "$2" "$3"; WARNINGS=$((WARNINGS + 1)); }
fail() { printf 'FAIL  %-22s %s\n      fix: %s\n' "$1" "$2" "$3"; FAILURES=$((FAILURES + 1)); }
read_value() { [[ -r "$1" ]] && tr -d '\n' < "$1"; }
# The bracketed (selected) word of a sysfs choice file, e.g. "always [madvise] never".
selected() { sed -n 's/.*\[\([^]]*\)\].*/\1/p' "$1" 2>/dev/null; }

check_kernel() {
    local release major minor
    release="$(uname -r)"
    major="${release%%.*}"
    minor="${release#*.}"; minor="${minor%%[.-]*}"
    if (( major > KERNEL_MAJOR_MIN || (major == KERNEL_MAJOR_MIN && minor >= KERNEL_MINOR_MIN) )); then
        ok kernel "$release (>= $KERNEL_MAJOR_MIN.$KERNEL_MINOR_MIN)"
    else
        fail kernel "$release is older than $KERNEL_MAJOR_MIN.$KERNEL_MINOR_MIN" \
            "upgrade the kernel (6.1 LTS or newer recommended)"
    fi
}

check_io_uring() {
    local disabled
    disabled="$(read_value /proc/sys/kernel/io_uring_disabled)"
    case "$disabled" in
        0) ok io_uring "kernel.io_uring_disabled = 0 (enabled)" ;;
        1) warn io_uring "kernel.io_uring_disabled = 1 (only for group kernel.io_uring_group)" \
               "sysctl -w kernel.io_uring_disabled=0, or run coresearch in group $(read_value /proc/sys/kernel/io_uring_group)" ;;
        2) fail io_uring "kernel.io_uring_disabled = 2 (disabled)" \
               "sysctl -w kernel.io_uring_disabled=0 and persist it in /etc/sysctl.d/90-coresearch.conf" ;;
        "") ok io_uring "no io_uring_disabled switch (kernel before 6.6: enabled unless compiled out)" ;;
        *) warn io_uring "unexpected kernel.io_uring_disabled = $disabled" "sysctl -w kernel.io_uring_disabled=0" ;;
    esac
    local seccomp
    seccomp="$(sed -n 's/^Seccomp:[[:space:]]*//p' /proc/self/status)"
    if [[ "$seccomp" == "2" ]]; then
        warn seccomp "a seccomp filter is active (container?); default Docker/containerd profiles block io_uring_setup" \
            "run with a seccomp profile that allows io_uring_setup/io_uring_enter/io_uring_register"
    else
        ok seccomp "no seccomp filter on this shell"
    fi
}

check_memlock() {
    local soft
    soft="$(ulimit -l)"
    if [[ "$soft" == "unlimited" ]] || (( soft >= MEMLOCK_KIB_MIN )); then
        ok memlock "ulimit -l = $soft KiB"
    else
        warn memlock "ulimit -l = $soft KiB < $MEMLOCK_KIB_MIN KiB (glommio locks memory for io_uring buffers)" \
            "systemd: LimitMEMLOCK=infinity; shell: ulimit -l unlimited; /etc/security/limits.d: '* - memlock unlimited'"
    fi
}

check_nofile() {
    local soft hard
    soft="$(ulimit -n)"; hard="$(ulimit -Hn)"
    if [[ "$soft" == "unlimited" ]] || (( soft >= NOFILE_MIN )); then
        ok open-files "ulimit -n = $soft (hard $hard)"
    else
        warn open-files "ulimit -n = $soft < $NOFILE_MIN (hard $hard)" \
            "systemd: LimitNOFILE=1048576; shell: ulimit -n $NOFILE_MIN; /etc/security/limits.d: '* - nofile 1048576'"
    fi
}

check_governor() {
    local governors
    governors="$(cat /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor 2>/dev/null | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
    if [[ -z "$governors" ]]; then
        info cpu-governor "no cpufreq interface (virtual machine, or frequency fixed by firmware)"
    elif [[ "$governors" =~ ^\ ?[0-9]+\ performance\;$ ]]; then
        ok cpu-governor "performance on every CPU"
    else
        warn cpu-governor "governors: $governors" \
            "cpupower frequency-set -g performance (or echo performance | tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor)"
    fi
}

check_transparent_huge_pages() {
    local enabled defrag
    enabled="$(selected /sys/kernel/mm/transparent_hugepage/enabled)"
    defrag="$(selected /sys/kernel/mm/transparent_hugepage/defrag)"
    if [[ -z "$enabled" ]]; then
        info thp "transparent huge pages not available"
    elif [[ "$enabled" == "always" ]]; then
        warn thp "enabled = always (compaction stalls a core at random; khugepaged churn)" \
            "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled (kernel arg: transparent_hugepage=madvise)"
    else
        ok thp "enabled = $enabled"
    fi
    if [[ "$defrag" == "always" ]]; then
        warn thp-defrag "defrag = always (synchronous compaction in page faults)" \
            "echo defer+madvise > /sys/kernel/mm/transparent_hugepage/defrag"
    elif [[ -n "$defrag" ]]; then
        ok thp-defrag "defrag = $defrag"
    fi
}

check_swappiness() {
    local swappiness
    swappiness="$(read_value /proc/sys/vm/swappiness)"
    if (( swappiness <= SWAPPINESS_MAX )); then
        ok swappiness "vm.swappiness = $swappiness"
    else
        warn swappiness "vm.swappiness = $swappiness (anonymous memory of the server may be swapped while the page cache holds shards)" \
            "sysctl -w vm.swappiness=1 (persist in /etc/sysctl.d/90-coresearch.conf)"
    fi
}

check_numa() {
    local node nodes=0
    for node in /sys/devices/system/node/node[0-9]*; do
        [[ -d "$node" ]] && nodes=$((nodes + 1))
    done
    if (( nodes <= 1 )); then
        ok numa "$nodes NUMA node"
    else
        warn numa "$nodes NUMA nodes: cores of one instance may be on different nodes (remote memory for the mesh and caches)" \
            "one instance per node: numactl --cpunodebind=N --membind=N coresearch --cores <cores of node N>"
    fi
}

check_sysctl_min() {
    local name="$1" minimum="$2" value
    value="$(read_value "/proc/sys/${name//./\/}")"
    if [[ -z "$value" ]]; then
        info "$name" "not readable"
    elif (( value >= minimum )); then
        ok "$name" "$value"
    else
        warn "$name" "$value < $minimum" "sysctl -w $name=$minimum (persist in /etc/sysctl.d/90-coresearch.conf)"
    fi
}

check_network() {
    check_sysctl_min net.core.somaxconn "$SOMAXCONN_MIN"
    check_sysctl_min net.ipv4.tcp_max_syn_backlog "$SYN_BACKLOG_MIN"
    check_sysctl_min vm.max_map_count "$MAX_MAP_COUNT_MIN"
    local low high
    read -r low high < /proc/sys/net/ipv4/ip_local_port_range
    if (( high - low >= LOCAL_PORTS_MIN )); then
        ok ip_local_port_range "$low-$high"
    else
        warn ip_local_port_range "$low-$high (few ports for outgoing connections)" \
            "sysctl -w net.ipv4.ip_local_port_range='1024 65000'"
    fi
    local reuse
    reuse="$(read_value /proc/sys/net/ipv4/tcp_tw_reuse)"
    if [[ "$reuse" == "0" ]]; then
        warn tcp_tw_reuse "0 (outgoing connections wait out TIME_WAIT)" "sysctl -w net.ipv4.tcp_tw_reuse=1"
    else
        ok tcp_tw_reuse "$reuse"
    fi
}

check_isolation() {
    local isolated nohz
    isolated="$(read_value /sys/devices/system/cpu/isolated)"
    nohz="$(read_value /sys/devices/system/cpu/nohz_full)"
    info cpu-isolation "isolated='${isolated:-none}' nohz_full='${nohz:-none}' (optional; see tuning/README.md)"
    if pgrep -x irqbalance >/dev/null 2>&1 && [[ -n "$isolated" ]]; then
        warn irqbalance "irqbalance runs while CPUs $isolated are isolated (it may move IRQs onto them)" \
            "IRQBALANCE_BANNED_CPULIST=$isolated in /etc/default/irqbalance, or stop irqbalance and set /proc/irq/*/smp_affinity_list"
    fi
}

check_data_dir() {
    local directory="$1"
    if [[ ! -d "$directory" ]]; then
        info data-dir "$directory does not exist; skipped filesystem checks"
        return
    fi
    local source fstype options
    read -r source fstype options < <(findmnt -no SOURCE,FSTYPE,OPTIONS --target "$directory" 2>/dev/null || df -T "$directory" | awk 'NR==2{print $1, $2, "?"}')
    case "$fstype" in
        ext4|xfs) ok data-fs "$directory on $fstype ($source)" ;;
        tmpfs) warn data-fs "$directory is on tmpfs: data is lost at reboot" "put --db-path on ext4 or xfs" ;;
        overlay) warn data-fs "$directory is on overlayfs (container layer): slow fsync, lost with the container" \
                     "mount a volume (ext4/xfs) for --db-path" ;;
        *) warn data-fs "$directory on $fstype ($source): not ext4/xfs, untested" "put --db-path on ext4 or xfs" ;;
    esac
    if [[ ",$options," == *",noatime,"* ]]; then
        ok data-mount "noatime"
    else
        warn data-mount "options $options (reads update access times)" \
            "mount the data filesystem with noatime (fstab: defaults,noatime)"
    fi
    # The scheduler belongs to the whole disk, not to a partition.
    local device parent scheduler
    device="$(basename "$(readlink -f "$source" 2>/dev/null || echo "$source")")"
    parent="$(lsblk -no PKNAME "/dev/$device" 2>/dev/null | head -1)"
    [[ -n "$parent" ]] && device="$parent"
    scheduler="$(selected "/sys/block/$device/queue/scheduler")"
    case "$scheduler" in
        "") info disk-scheduler "cannot read /sys/block/$device/queue/scheduler" ;;
        none|mq-deadline) ok disk-scheduler "$device: $scheduler" ;;
        *) warn disk-scheduler "$device: $scheduler" "echo none > /sys/block/$device/queue/scheduler (NVMe) or mq-deadline (SATA)" ;;
    esac
    local available
    available="$(df -Pk "$directory" | awk 'NR==2 {print int($4 / 1048576)}')"
    info data-free "${available} GiB free under $directory"
}

echo "coresearch host check — $(hostname) — $(date -u +%Y-%m-%dT%H:%M:%SZ)"
check_kernel
check_io_uring
check_memlock
check_nofile
check_governor
check_transparent_huge_pages
check_swappiness
check_numa
check_network
check_isolation
check_data_dir "$DATA_DIR"
echo "summary: $FAILURES FAIL, $WARNINGS WARN"
if (( FAILURES > 0 || (STRICT == 1 && WARNINGS > 0) )); then
    exit 1
fi
exit 0
