/* mc_profile.c: a QEMU TCG plugin that writes an exact execution profile of an Arm guest,
 * the input of microcompile's cycle estimate (microcompile/target/cycles.py).
 *
 * Built at run time by microcompile/project/qemu_profile.py with the host compiler
 * (cc -shared -fPIC) and loaded with
 *     qemu-system-arm ... -plugin mc_profile.so,out=PATH[,mark=ADDR]...[,flash=LO:HI][,lines=N][,line=BYTES][,ways=W]
 *
 * What it records, per translated block (TB):
 *   - the address and bytes of each of its instructions (once, when QEMU translates it);
 *   - how often it starts executing (a TB runs to its end unless an exception cuts it);
 *   - how often the next TB to run starts right after it ("fall") or elsewhere ("taken"):
 *     a TB ends at a branch, so this says whether its final branch was taken;
 *   - with `flash`, per instruction: its data reads inside [LO, HI) (weights and constants in
 *     flash) and how many of them miss an LRU cache of `lines` lines of `line` bytes, `ways`
 *     ways (default: fully associative), a model of the flash accelerator's or the cache's
 *     data lines.
 * With `mark` (up to 8), each time a TB starting at one of them runs (e.g. the entry of
 * mc_platform_cycles), the counts so far are written out as one segment and restarted: the
 * segments are the windows the firmware's own counter measures (one inference, one kernel).
 * A segment lists only the blocks that ran in it, and the file is flushed after each one.
 *
 * Output (text, one record a line; numbers in decimal, addresses and bytes in hex):
 *   B <tb> <vaddr> <n> <insn-hex>...     a TB as translated (insn-hex in memory byte order)
 *   S <segment>                          the counts below belong to this segment
 *   C <tb> <count> <taken> <fall>        a TB's executions in the segment
 *   F <tb> <index> <reads> <misses>      an instruction's flash data reads in the segment
 *   E                                    end of profile
 *
 * The plugin API declarations below are written from QEMU's documented plugin API
 * (docs/devel/tcg-plugins.rst, API version 1 as in QEMU 7.2), since Debian ships no
 * qemu-plugin.h. Only the calls this file uses are declared.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the QEMU plugin API (version 1) ---- */
typedef uint64_t qemu_plugin_id_t;
typedef uint32_t qemu_plugin_meminfo_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef struct qemu_info_t qemu_info_t;   /* only passed through */

enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };

typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
                                          uint64_t vaddr, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_mem_cb_t cb,
                                      enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw,
                                      void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
void qemu_plugin_outs(const char *string);
bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;
/* ---- end of the API ---- */

#define MAX_LINES 4096
#define MAX_WAYS 64
#define MAX_MARKS 8

struct flash_count {
    uint64_t reads, misses;
};

struct tb_rec {
    uint32_t id;
    uint64_t vaddr, next;            /* next: the address right after its last instruction */
    uint32_t n;
    uint64_t count, taken, fall;
    struct flash_count *flash;       /* n entries, or NULL without `flash` */
    bool listed;                     /* in `touched` */
};

static FILE *out;
static struct tb_rec **tbs;
static uint32_t n_tbs, cap_tbs;
static struct tb_rec **touched;    /* the blocks that ran in this segment */
static uint32_t n_touched;
static struct tb_rec *last;
static uint64_t marks[MAX_MARKS];
static uint32_t n_marks;
static uint32_t segment;
static uint64_t flash_lo, flash_hi;
static bool flash_on;
static uint32_t n_lines = 8, n_ways = 0, n_sets = 1, line_shift = 5;
static uint64_t lru[MAX_LINES];     /* per set, its line tags, most recent first; UINT64_MAX is empty */

static void dump_segment(void)
{
    uint32_t i, k;

    fprintf(out, "S %u\n", segment);
    for (i = 0; i < n_touched; i++) {
        struct tb_rec *t = touched[i];
        t->listed = false;
        fprintf(out, "C %u %llu %llu %llu\n", t->id, (unsigned long long)t->count,
                (unsigned long long)t->taken, (unsigned long long)t->fall);
        t->count = t->taken = t->fall = 0;
        for (k = 0; t->flash != NULL && k < t->n; k++) {
            if (t->flash[k].reads == 0)
                continue;
            fprintf(out, "F %u %u %llu %llu\n", t->id, k, (unsigned long long)t->flash[k].reads,
                    (unsigned long long)t->flash[k].misses);
            t->flash[k].reads = t->flash[k].misses = 0;
        }
    }
    n_touched = 0;
    segment++;
    fflush(out);
}

static void touch(struct tb_rec *t)
{
    if (!t->listed) {
        touched[n_touched++] = t;
        t->listed = true;
    }
}

static void tb_exec(unsigned int vcpu, void *userdata)
{
    struct tb_rec *t = userdata;
    uint32_t i;

    (void)vcpu;
    if (last != NULL) {      /* where the previous block went: its final branch's outcome */
        touch(last);
        if (t->vaddr == last->next)
            last->fall++;
        else
            last->taken++;
    }
    for (i = 0; i < n_marks; i++) {
        if (t->vaddr == marks[i]) {
            dump_segment();
            break;
        }
    }
    touch(t);
    t->count++;
    last = t;
}

/* A data read: count it when it falls in flash, and look its line up in the LRU buffer. */
static void mem_read(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *userdata)
{
    struct flash_count *c = userdata;
    uint64_t tag, *set;
    uint32_t i;

    (void)vcpu;
    if (qemu_plugin_mem_is_store(info) || vaddr < flash_lo || vaddr >= flash_hi)
        return;
    c->reads++;
    tag = vaddr >> line_shift;
    set = &lru[(tag % n_sets) * n_ways];
    for (i = 0; i < n_ways && set[i] != tag; i++)
        ;
    if (i == n_ways) {
        c->misses++;
        i = n_ways - 1;
    }
    memmove(&set[1], &set[0], i * sizeof set[0]);
    set[0] = tag;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    struct tb_rec *t;
    size_t k, j;

    (void)id;
    if (n_tbs == cap_tbs) {
        cap_tbs = cap_tbs ? 2 * cap_tbs : 1024;
        tbs = realloc(tbs, cap_tbs * sizeof *tbs);
        touched = realloc(touched, cap_tbs * sizeof *touched);
        if (tbs == NULL || touched == NULL)
            abort();
    }
    t = calloc(1, sizeof *t);
    if (t == NULL)
        abort();
    t->id = n_tbs;
    t->vaddr = qemu_plugin_tb_vaddr(tb);
    t->n = (uint32_t)qemu_plugin_tb_n_insns(tb);
    t->next = t->vaddr;
    if (flash_on && t->n > 0) {
        t->flash = calloc(t->n, sizeof *t->flash);
        if (t->flash == NULL)
            abort();
    }
    tbs[n_tbs++] = t;
    fprintf(out, "B %u %llx %u", t->id, (unsigned long long)t->vaddr, t->n);
    for (k = 0; k < t->n; k++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, k);
        const uint8_t *data = qemu_plugin_insn_data(insn);
        size_t size = qemu_plugin_insn_size(insn);
        fputc(' ', out);
        for (j = 0; j < size; j++)
            fprintf(out, "%02x", data[j]);
        t->next = qemu_plugin_insn_vaddr(insn) + size;
        if (flash_on)
            /* QEMU 7.2 calls no QEMU_PLUGIN_MEM_R callback (measured): ask for both, keep reads */
            qemu_plugin_register_vcpu_mem_cb(insn, mem_read, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW,
                                             &t->flash[k]);
    }
    fputc('\n', out);
    qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS, t);
}

static void at_exit(qemu_plugin_id_t id, void *userdata)
{
    (void)id;
    (void)userdata;
    dump_segment();
    fputs("E\n", out);
    fclose(out);
    out = NULL;
}

static bool parse_u64(const char *s, uint64_t *v)
{
    char *end;

    *v = strtoull(s, &end, 0);
    return end != s && *end == '\0';
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    const char *path = NULL;
    uint64_t v;
    int i;

    (void)info;
    for (i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "out=", 4) == 0) {
            path = a + 4;
        } else if (strncmp(a, "mark=", 5) == 0 && parse_u64(a + 5, &v) && n_marks < MAX_MARKS) {
            marks[n_marks++] = v;
        } else if (strncmp(a, "flash=", 6) == 0 && strchr(a, ':') != NULL) {
            char lo[32];
            size_t n = (size_t)(strchr(a, ':') - (a + 6));
            if (n == 0 || n >= sizeof lo)
                goto bad;
            memcpy(lo, a + 6, n);
            lo[n] = '\0';
            if (!parse_u64(lo, &flash_lo) || !parse_u64(strchr(a, ':') + 1, &flash_hi))
                goto bad;
            flash_on = true;
        } else if (strncmp(a, "lines=", 6) == 0 && parse_u64(a + 6, &v) && v >= 1 && v <= MAX_LINES) {
            n_lines = (uint32_t)v;
        } else if (strncmp(a, "ways=", 5) == 0 && parse_u64(a + 5, &v) && v >= 1 && v <= MAX_WAYS) {
            n_ways = (uint32_t)v;
        } else if (strncmp(a, "line=", 5) == 0 && parse_u64(a + 5, &v) && v >= 4 && v <= 4096 && (v & (v - 1)) == 0) {
            for (line_shift = 0; (1ull << line_shift) < v; line_shift++)
                ;
        } else {
            goto bad;
        }
    }
    if (n_ways == 0)
        n_ways = n_lines <= MAX_WAYS ? n_lines : MAX_WAYS;
    if (n_lines % n_ways != 0)
        goto bad;
    n_sets = n_lines / n_ways;
    if (path == NULL) {
        qemu_plugin_outs("mc_profile: needs out=PATH\n");
        return -1;
    }
    out = fopen(path, "w");
    if (out == NULL) {
        qemu_plugin_outs("mc_profile: cannot open the out= file\n");
        return -1;
    }
    for (i = 0; i < MAX_LINES; i++)
        lru[i] = UINT64_MAX;
    fputs("# mc_profile 1\n", out);
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
bad:
    qemu_plugin_outs("mc_profile: bad argument (out=PATH, mark=ADDR, flash=LO:HI, lines=N, line=BYTES, ways=W)\n");
    return -1;
}
