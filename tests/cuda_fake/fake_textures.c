/* fake_textures.c: texture objects and CUDA arrays for the fake CUDA driver
 * (included at the end of fake_libcuda.c; uses fake_cuda.h and its memory
 * table). cuTexObjectCreate checks its descriptors as strictly as the real
 * driver documents (resource type, format, channels, alignment of linear and
 * pitch2D memory, address and filter modes, flags) and records them;
 * cuArray3DCreate_v2 holds an array's texels in host memory; cuMemcpy3D_v2
 * copies between host, device and array memory with pitches. The test hooks
 * read a texture's recorded description and the bytes of one of its texels,
 * so tests see what quicklaunch built and copied. */

enum { TEX_ALIGN = 512, TEX_PITCH_ALIGN = 32, MAX_TEX = 256, MAX_ARRAYS = 256 };
enum { RES_ARRAY = 0, RES_LINEAR = 2, RES_PITCH2D = 3 };
enum { MEM_HOST = 1, MEM_DEVICE = 2, MEM_ARRAY = 3 };

typedef struct {
    int resType;
    union {
        struct { void *hArray; } array;
        struct { CUdeviceptr devPtr; int format; unsigned numChannels; size_t sizeInBytes; } linear;
        struct { CUdeviceptr devPtr; int format; unsigned numChannels; size_t width, height, pitchInBytes; } pitch2D;
        struct { int reserved[32]; } reserved;
    } res;
    unsigned flags;
} ResDesc;
typedef struct {
    int addressMode[3], filterMode;
    unsigned flags, maxAnisotropy;
    int mipmapFilterMode;
    float mipmapLevelBias, minMipmapLevelClamp, maxMipmapLevelClamp, borderColor[4];
    int reserved[12];
} TexDesc;
typedef struct { size_t Width, Height, Depth; int Format; unsigned NumChannels, Flags; } Array3DDesc;
typedef struct {
    size_t srcXInBytes, srcY, srcZ, srcLOD;
    int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray, *reserved0;
    size_t srcPitch, srcHeight;
    size_t dstXInBytes, dstY, dstZ, dstLOD;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray, *reserved1;
    size_t dstPitch, dstHeight;
    size_t WidthInBytes, Height, Depth;
} Memcpy3D;

typedef struct { int live, device, format; unsigned channels; size_t w, h, d, texel; unsigned char *mem; } FakeArray;
typedef struct {
    int live, device, res_type, format, filter;
    unsigned channels, flags;
    size_t width, height, depth, pitch, texel;
    unsigned char *base;
    FakeArray *array;
    int address[3];
    float border[4];
} FakeTex;

static FakeArray arrays[MAX_ARRAYS];
static FakeTex textures[MAX_TEX];

static size_t format_bytes(int f) {  /* CUarray_format -> bytes per channel, 0 if unknown */
    switch (f) {
    case 0x01: case 0x08: return 1;
    case 0x02: case 0x09: case 0x10: return 2;
    case 0x03: case 0x0a: case 0x20: return 4;
    default: return 0;
    }
}
static int good_channels(unsigned c) { return c == 1 || c == 2 || c == 4; }

static CUresult array_create(void **out, const Array3DDesc *d) {
    NEED_CTX();
    if (!out || !d || !format_bytes(d->Format) || !good_channels(d->NumChannels) || !d->Width ||
        (d->Depth && !d->Height) || d->Flags)
        return E_VALUE;
    for (int i = 0; i < MAX_ARRAYS; i++) {
        FakeArray *a = &arrays[i];
        if (a->live) continue;
        size_t texel = format_bytes(d->Format) * d->NumChannels;
        size_t h = d->Height ? d->Height : 1, dd = d->Depth ? d->Depth : 1;
        a->mem = calloc(d->Width * h * dd, texel);
        if (!a->mem) return E_OOM;
        a->live = 1, a->device = current->device, a->format = d->Format, a->channels = d->NumChannels;
        a->w = d->Width, a->h = d->Height, a->d = d->Depth, a->texel = texel;
        *out = a;
        return OK;
    }
    return E_OOM;
}
EXPORT CUresult cuArray3DCreate_v2(void **out, const Array3DDesc *d) { LOCKED(array_create(out, d)); }

static FakeArray *find_array(void *h) {
    FakeArray *a = h;
    return a >= arrays && a < arrays + MAX_ARRAYS && a->live ? a : NULL;
}
static CUresult array_destroy(void *h) {
    NEED_CTX();
    FakeArray *a = find_array(h);
    if (!a) return E_HANDLE;
    for (int i = 0; i < MAX_TEX; i++) if (textures[i].live && textures[i].array == a) return E_VALUE;
    free(a->mem);
    *a = (FakeArray){0};
    return OK;
}
EXPORT CUresult cuArrayDestroy(void *h) { LOCKED(array_destroy(h)); }

/* One side of a copy: its first byte, row pitch and slice height; 0 when
 * the region [x, y, z] + (width, height, depth) is not all in that memory. */
static unsigned char *side(int type, const void *host, CUdeviceptr dev, void *arr, size_t x, size_t y,
                           size_t z, size_t pitch, size_t height, const Memcpy3D *c, size_t *rp, size_t *sh) {
    size_t rows = height ? height : c->Height;
    if (type == MEM_ARRAY) {
        FakeArray *a = find_array(arr);
        size_t ah = a && a->h ? a->h : 1, ad = a && a->d ? a->d : 1;
        if (!a || x + c->WidthInBytes > a->w * a->texel || y + c->Height > ah || z + c->Depth > ad) return NULL;
        *rp = a->w * a->texel, *sh = ah;
        return a->mem + (z * ah + y) * *rp + x;
    }
    if (pitch < c->WidthInBytes || rows < c->Height) return NULL;
    *rp = pitch, *sh = rows;
    size_t first = (z * rows + y) * pitch + x;
    size_t span = ((c->Depth - 1) * rows + (c->Height - 1)) * pitch + c->WidthInBytes;
    if (type == MEM_HOST) return host ? (unsigned char *)host + first : NULL;
    if (type == MEM_DEVICE) return find_alloc((uintptr_t)dev + first, span) ? (unsigned char *)P(dev) + first : NULL;
    return NULL;
}
static CUresult memcpy3d(const Memcpy3D *c) {
    NEED_CTX();
    if (!c || !c->WidthInBytes || !c->Height || !c->Depth || c->srcLOD || c->dstLOD) return E_VALUE;
    size_t sp, ssh, dp, dsh;
    unsigned char *s = side(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray, c->srcXInBytes, c->srcY,
                            c->srcZ, c->srcPitch, c->srcHeight, c, &sp, &ssh);
    unsigned char *d = side(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray, c->dstXInBytes, c->dstY,
                            c->dstZ, c->dstPitch, c->dstHeight, c, &dp, &dsh);
    if (!s || !d) return E_VALUE;
    for (size_t z = 0; z < c->Depth; z++)
        for (size_t y = 0; y < c->Height; y++)
            memmove(d + (z * dsh + y) * dp, s + (z * ssh + y) * sp, c->WidthInBytes);
    return OK;
}
EXPORT CUresult cuMemcpy3D_v2(const Memcpy3D *c) { LOCKED(memcpy3d(c)); }

static CUresult tex_create(unsigned long long *out, const ResDesc *r, const TexDesc *t, const void *view) {
    NEED_CTX();
    if (!out || !r || !t || view || r->flags) return E_VALUE;
    FakeTex x = {0};
    x.live = 1, x.device = current->device, x.res_type = r->resType, x.height = 1, x.depth = 1;
    switch (r->resType) {
    case RES_LINEAR:
        x.format = r->res.linear.format, x.channels = r->res.linear.numChannels;
        x.texel = format_bytes(x.format) * x.channels;
        if (!x.texel || !good_channels(x.channels) || r->res.linear.devPtr % TEX_ALIGN ||
            !r->res.linear.sizeInBytes || r->res.linear.sizeInBytes % x.texel ||
            !find_alloc((uintptr_t)r->res.linear.devPtr, r->res.linear.sizeInBytes))
            return E_VALUE;
        x.width = r->res.linear.sizeInBytes / x.texel, x.pitch = r->res.linear.sizeInBytes;
        x.base = P(r->res.linear.devPtr);
        break;
    case RES_PITCH2D:
        x.format = r->res.pitch2D.format, x.channels = r->res.pitch2D.numChannels;
        x.texel = format_bytes(x.format) * x.channels;
        x.width = r->res.pitch2D.width, x.height = r->res.pitch2D.height, x.pitch = r->res.pitch2D.pitchInBytes;
        if (!x.texel || !good_channels(x.channels) || r->res.pitch2D.devPtr % TEX_ALIGN || !x.width ||
            !x.height || x.pitch % TEX_PITCH_ALIGN || x.pitch < x.width * x.texel ||
            !find_alloc((uintptr_t)r->res.pitch2D.devPtr, x.pitch * x.height))
            return E_VALUE;
        x.base = P(r->res.pitch2D.devPtr);
        break;
    case RES_ARRAY: {
        FakeArray *a = find_array(r->res.array.hArray);
        if (!a || a->device != current->device) return E_VALUE;
        x.array = a, x.format = a->format, x.channels = a->channels, x.texel = a->texel;
        x.width = a->w, x.height = a->h ? a->h : 1, x.depth = a->d ? a->d : 1, x.pitch = a->w * a->texel;
        x.base = a->mem;
        break;
    }
    default:
        return E_VALUE;
    }
    for (int i = 0; i < 3; i++) {
        if (t->addressMode[i] < 0 || t->addressMode[i] > 3) return E_VALUE;
        x.address[i] = t->addressMode[i];
    }
    if (t->filterMode < 0 || t->filterMode > 1 || (t->flags & ~0x73u)) return E_VALUE;
    const int integer = x.format != 0x10 && x.format != 0x20;
    if (t->filterMode == 1 && integer && (t->flags & 1)) return E_VALUE;  /* linear filter of integers */
    x.filter = t->filterMode, x.flags = t->flags;
    memcpy(x.border, t->borderColor, sizeof x.border);
    for (int i = 0; i < MAX_TEX; i++)
        if (!textures[i].live) {
            textures[i] = x;
            *out = 0x7e0000ull + (unsigned long long)i + 1;
            return OK;
        }
    return E_OOM;
}
EXPORT CUresult cuTexObjectCreate(unsigned long long *out, const ResDesc *r, const TexDesc *t, const void *view) {
    LOCKED(tex_create(out, r, t, view));
}
static FakeTex *find_tex(unsigned long long h) {
    unsigned long long i = h - 0x7e0000ull - 1;
    return h > 0x7e0000ull && i < MAX_TEX && textures[i].live ? &textures[i] : NULL;
}
static CUresult tex_destroy(unsigned long long h) {
    NEED_CTX();
    FakeTex *t = find_tex(h);
    if (!t) return E_VALUE;
    *t = (FakeTex){0};
    return OK;
}
EXPORT CUresult cuTexObjectDestroy(unsigned long long h) { LOCKED(tex_destroy(h)); }

/* ---- test-only exports ---- */
/* A live texture's description: [device, resource type, format, channels,
 * width, height, depth, pitch, address x, y, z, filter, flags] and its border
 * colour. Returns 0, or -1 if `h` is not a live texture. */
EXPORT int fake_cuda_texture_desc(unsigned long long h, long long out[13], float border[4]) {
    pthread_mutex_lock(&lock);
    FakeTex *t = find_tex(h);
    if (t) {
        long long v[13] = {t->device, t->res_type, t->format, t->channels, (long long)t->width,
                           (long long)t->height, (long long)t->depth, (long long)t->pitch, t->address[0],
                           t->address[1], t->address[2], t->filter, t->flags};
        memcpy(out, v, sizeof v);
        memcpy(border, t->border, sizeof t->border);
    }
    pthread_mutex_unlock(&lock);
    return t ? 0 : -1;
}
/* The bytes of texel (x, y, z) of a live texture into out (its texel size);
 * returns that size, or -1. */
EXPORT int fake_cuda_texture_texel(unsigned long long h, size_t x, size_t y, size_t z, void *out) {
    pthread_mutex_lock(&lock);
    FakeTex *t = find_tex(h);
    int n = -1;
    if (t && x < t->width && y < t->height && z < t->depth) {
        memcpy(out, t->base + (z * t->height + y) * t->pitch + x * t->texel, t->texel);
        n = (int)t->texel;
    }
    pthread_mutex_unlock(&lock);
    return n;
}
EXPORT int fake_cuda_texture_count(void) {
    pthread_mutex_lock(&lock);
    int n = 0;
    for (int i = 0; i < MAX_TEX; i++) n += textures[i].live;
    for (int i = 0; i < MAX_ARRAYS; i++) n += arrays[i].live << 16;  /* arrays in the upper half */
    pthread_mutex_unlock(&lock);
    return n;
}
