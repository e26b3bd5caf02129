/*
 * Calibration server for bench/dns-qps.sh: the cheapest possible UDP "DNS
 * server". It reads datagrams in batches (recvmmsg), sets QR and sends each
 * query straight back (sendmmsg); no answer record, no parsing. Whatever rate
 * the load generator reaches against it is the ceiling of the load generator
 * (and of loopback UDP) on this machine: if that is well above a server's
 * figure, the server, not the load generator, was the bottleneck.
 *
 * usage: reflector PORT LIFETIME_SECONDS   (binds 127.0.0.1 only; exits after
 *        LIFETIME_SECONDS even if nobody stops it)
 * Build: cc -O2 -Wall -o reflector reflector.c
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define BATCH 64
#define MAXLEN 1500

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: reflector PORT LIFETIME_SECONDS\n");
        return 2;
    }
    int port = atoi(argv[1]), life = atoi(argv[2]);
    if (port < 1 || port > 65535 || life < 1 || life > 86400) {
        fprintf(stderr, "reflector: bad port or lifetime\n");
        return 2;
    }
    alarm((unsigned)life); /* default SIGALRM action terminates the process */
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) { perror("socket"); return 1; }
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) { perror("bind"); return 1; }
    printf("{\"msg\":\"ready\",\"port\":%d,\"pid\":%d}\n", port, (int)getpid());
    fflush(stdout);

    static unsigned char buf[BATCH][MAXLEN];
    static struct sockaddr_in from[BATCH];
    static struct iovec iov[BATCH];
    static struct mmsghdr m[BATCH];
    for (;;) {
        for (int i = 0; i < BATCH; i++) {
            iov[i].iov_base = buf[i];
            iov[i].iov_len = MAXLEN;
            m[i].msg_hdr.msg_iov = &iov[i];
            m[i].msg_hdr.msg_iovlen = 1;
            m[i].msg_hdr.msg_name = &from[i];
            m[i].msg_hdr.msg_namelen = sizeof from[i];
            m[i].msg_hdr.msg_control = NULL;
            m[i].msg_hdr.msg_controllen = 0;
        }
        int n = recvmmsg(fd, m, BATCH, MSG_WAITFORONE, NULL);
        if (n <= 0) continue;
        int k = 0;
        for (int i = 0; i < n; i++) {
            if (m[i].msg_len < 12) continue;
            buf[i][2] |= 0x80; /* QR */
            iov[i].iov_len = m[i].msg_len;
            if (k != i) m[k] = m[i];
            k++;
        }
        if (k > 0 && sendmmsg(fd, m, (unsigned)k, 0) < 0) perror("sendmmsg");
    }
}
