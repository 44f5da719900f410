/* LD_PRELOAD shim for comparisons: turns TCP_NODELAY on for every connection a server
 * accepts. Our load clients set it on their side; a server that leaves Nagle's algorithm
 * on would otherwise wait on delayed ACKs between the small writes of one response, and
 * the bench would measure that instead of the server.
 *
 *   gcc -O2 -shared -fPIC -o nodelay.so nodelay.c -ldl
 *   LD_PRELOAD=$PWD/nodelay.so some-server
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

static int with_nodelay(int fd) {
    int on = 1;
    if (fd >= 0) {
        /* Fails harmlessly on a socket that is not TCP. */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    }
    return fd;
}

int accept(int fd, struct sockaddr *addr, socklen_t *len) {
    static int (*real)(int, struct sockaddr *, socklen_t *);
    if (!real) real = dlsym(RTLD_NEXT, "accept");
    return with_nodelay(real(fd, addr, len));
}

int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
    static int (*real)(int, struct sockaddr *, socklen_t *, int);
    if (!real) real = dlsym(RTLD_NEXT, "accept4");
    return with_nodelay(real(fd, addr, len, flags));
}
