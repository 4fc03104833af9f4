/*
 * pldrive.c - speaks the preload negotiation to psid (psproto.h, PSM_PL_*) as one process
 * under the preload library would, for test/shell/psid_preload.sh. One connection to psid
 * ($PSID_SOCKET) for the whole run; commands on stdin, one answer line each on stdout:
 *
 *   open UDPPORT                 "open ERRNO [node N ep E]"
 *   listen PORT | unlisten PORT  "listen ERRNO" | "unlisten ERRNO"
 *   connect ADDR PORT SRCPORT    "connect 0 node N ep E udp U addr A key HEX" or
 *   accept PEERADDR PEERPORT PORT     "connect ERRNO WHY" (likewise "accept ...")
 *
 * Exits at the end of its input (the endpoint and its registrations die with it).
 */
#include "psi.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void answer(const char *what, const struct psmsg *m)
{
    uint32_t e = EPROTO, node = 0, ep = 0, udp = 0;
    char text[256] = "", addr[64] = "";
    struct psmsg_field key;
    psmsg_get_u32(&m->body, PSF_ERRNO, &e);
    printf("%s %u", what, e);
    if (e == 0 && psmsg_get_u32(&m->body, PSF_NODE_ID, &node) == 0 &&
        psmsg_get_u32(&m->body, PSF_ENDPOINT, &ep) == 0) {
        printf(" node %u ep %u", node, ep);
        if (psmsg_get_u32(&m->body, PSF_UDP_PORT, &udp) == 0 &&
            psmsg_get_str(&m->body, PSF_ADDR, addr, sizeof addr) == 0 &&
            psmsg_find(&m->body, PSF_KEY, &key)) {
            printf(" udp %u addr %s key ", udp, addr);
            for (uint32_t i = 0; i < key.len; i++) printf("%02x", key.val[i]);
        }
    } else if (psmsg_get_str(&m->body, PSF_TEXT, text, sizeof text) == 0) {
        printf(" %s", text);
    }
    printf("\n");
    fflush(stdout);
}

int main(void)
{
    struct psi c;
    if (psi_open(&c, NULL) < 0) {
        printf("connect %s: %s\n", psi_socket_path(), strerror(errno));
        return 1;
    }
    char line[512], cmd[32], addr[128];
    unsigned a, b;
    while (fgets(line, sizeof line, stdin)) {
        struct psmsg_buf req = {0};
        struct psmsg m;
        if (sscanf(line, "%31s", cmd) != 1) continue;
        if (!strcmp(cmd, "open") && sscanf(line, "%*s %u", &a) == 1) {
            psmsg_begin(&req, PSM_PL_OPEN, 0);
            psmsg_put_u32(&req, PSF_PORT, a);
        } else if ((!strcmp(cmd, "listen") || !strcmp(cmd, "unlisten")) &&
                   sscanf(line, "%*s %u", &a) == 1) {
            psmsg_begin(&req, cmd[0] == 'l' ? PSM_PL_LISTEN : PSM_PL_UNLISTEN, 0);
            psmsg_put_u32(&req, PSF_PORT, a);
        } else if ((!strcmp(cmd, "connect") || !strcmp(cmd, "accept")) &&
                   sscanf(line, "%*s %127s %u %u", addr, &a, &b) == 3) {
            /* connect: ADDR PORT SRCPORT; accept: PEERADDR PEERPORT PORT */
            psmsg_begin(&req, cmd[0] == 'c' ? PSM_PL_CONNECT : PSM_PL_ACCEPT, 0);
            psmsg_put_str(&req, PSF_ADDR, addr);
            psmsg_put_u32(&req, PSF_PORT, a);
            psmsg_put_u32(&req, PSF_SRC_PORT, b);
        } else {
            printf("%s usage\n", cmd);
            fflush(stdout);
            continue;
        }
        int r = psi_call(&c, &req, &m);
        psmsg_buf_free(&req);
        if (r < 0) {
            printf("%s error %s\n", cmd, strerror(errno));
            fflush(stdout);
            return 1;
        }
        answer(cmd, &m);
    }
    psi_close(&c);
    return 0;
}
