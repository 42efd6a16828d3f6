/* cutune — removing a folder tree without following symbolic links (see cutune/util.h). */
#include "cutune/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Deeper trees than this are not something cutune writes. */
#define CUT_REMOVE_MAX_DEPTH 32

/* Removes name (relative to the open directory dfd) and, for a directory, everything below it. */
static int remove_at(int dfd, const char *name, int depth, long *count, cut_err *e)
{
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : cut_err_set(e, "cannot inspect '%s': %s", name, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        if (depth >= CUT_REMOVE_MAX_DEPTH)
            return cut_err_set(e, "'%s' is nested more than %d folders deep; not removing it", name, depth);
        int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d) {
            if (fd >= 0)
                close(fd);
            return cut_err_set(e, "cannot open folder '%s': %s", name, strerror(errno));
        }
        int rc = 0;
        struct dirent *de;
        while (rc == 0 && (de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            rc = remove_at(dirfd(d), de->d_name, depth + 1, count, e);
        }
        closedir(d);
        if (rc != 0)
            return cut_err_wrap(e, "%s", name);
        if (unlinkat(dfd, name, AT_REMOVEDIR) != 0)
            return cut_err_set(e, "cannot remove folder '%s': %s", name, strerror(errno));
    } else if (unlinkat(dfd, name, 0) != 0) {
        return cut_err_set(e, "cannot remove '%s': %s", name, strerror(errno));
    }
    if (count)
        (*count)++;
    return 0;
}

int cut_remove_tree(const char *path, long *count, cut_err *e)
{
    /* Split into parent folder + last component so that the top itself is also checked with AT_SYMLINK_NOFOLLOW. */
    char buf[4096];
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        len--;
    if (len == 0 || len >= sizeof buf)
        return cut_err_set(e, "invalid path '%s'", path);
    memcpy(buf, path, len);
    buf[len] = '\0';
    const char *dir = ".", *name = buf;
    char *slash = strrchr(buf, '/');
    if (slash) {
        *slash = '\0';
        name = slash + 1;
        dir = buf[0] ? buf : "/";
    }
    if (*name == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return cut_err_set(e, "refusing to remove '%s'", path);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return cut_err_set(e, "cannot open the folder of '%s': %s", path, strerror(errno));
    int rc = remove_at(dfd, name, 0, count, e);
    close(dfd);
    if (rc != 0)
        return cut_err_wrap(e, "removing '%s'", path);
    return 0;
}
