/* Texture objects for the quicklaunch CPU device: cudaTextureObject_t and
 * the fetch functions (tex1Dfetch, tex1D, tex2D, tex3D, their *Lod forms and
 * the pointer-output overloads), computing what CUDA's texture unit computes
 * (CUDA C++ Programming Guide, appendix "Texture Fetching").
 *
 * A handle is the address of a ql_texture descriptor that quicklaunch's
 * ql.Texture builds (quicklaunch/textures/cpu.py lays the same struct out
 * with ctypes; QL_TEXTURE_MAGIC changes whenever the layout does).
 *
 * What a fetch computes, per axis of extent N:
 *   - normalised coordinates are first scaled by N;
 *   - point filtering reads texel floor(x);
 *   - linear filtering reads texels i = floor(x - 0.5) and i + 1 with weight
 *     a = frac(x - 0.5) held, as the hardware holds it, in 9-bit fixed point
 *     with 8 fractional bits: a is rounded to a multiple of 1/256 (so 1.0 can
 *     occur), and the result is sum(w * T) over the 2, 4 or 8 taps;
 *   - the address mode is applied to every tap's integer index: clamp to
 *     [0, N-1]; border: outside [0, N) reads the border colour; wrap (i mod N)
 *     and mirror (period 2N, reflected) only with normalised coordinates
 *     (CUDA supports them only there; otherwise they clamp).
 * Texels are converted before filtering: float and half as floats, 8- and
 * 16-bit integers in cudaReadModeNormalizedFloat to [0, 1] (unsigned,
 * x / (2^n - 1)) or [-1, 1] (signed, max(x / (2^(n-1) - 1), -1)), other
 * integers as they are (element type; point filtering only).
 * tex1Dfetch reads linear memory by integer index; outside [0, N) it reads 0.
 * The result type's components take the texel's channels in order; its
 * components beyond the texture's channels are 0. */
#ifndef QL_TEXTURE_H
#define QL_TEXTURE_H

typedef unsigned long long cudaTextureObject_t;

enum cudaTextureAddressMode {
    cudaAddressModeWrap = 0, cudaAddressModeClamp = 1, cudaAddressModeMirror = 2,
    cudaAddressModeBorder = 3
};
enum cudaTextureFilterMode { cudaFilterModePoint = 0, cudaFilterModeLinear = 1 };
enum cudaTextureReadMode { cudaReadModeElementType = 0, cudaReadModeNormalizedFloat = 1 };

#define QL_TEXTURE_MAGIC 0x3130305845544c51ull /* "QLTEX001" */

/* The descriptor (64-bit fields first; no padding on any LP64 ABI). */
struct ql_texture {
    unsigned long long magic;
    const unsigned char *data;
    unsigned long long row_pitch;     /* bytes from one row to the next */
    unsigned long long slice_pitch;   /* bytes from one 2D slice to the next */
    unsigned int extent[3];           /* width, height, depth (1 where unused) */
    unsigned int dims;                /* 1, 2 or 3 */
    unsigned int linear;              /* 1: linear memory (tex1Dfetch) */
    unsigned int channels;            /* 1, 2 or 4 */
    unsigned int channel_bytes;       /* 1, 2 or 4 */
    unsigned int format;              /* 0 signed int, 1 unsigned int, 2 float (2 bytes: half) */
    unsigned int address[3];          /* cudaTextureAddressMode per axis */
    unsigned int filter;              /* cudaTextureFilterMode */
    unsigned int read_normalized;     /* cudaReadModeNormalizedFloat */
    unsigned int normalized_coords;
    float border[4];
};

/* One texel after conversion: floats, or 32-bit integers (element read mode
 * of an integer format). */
struct ql_texel { float f[4]; int i[4]; };

/* A handle that is no live descriptor fails the launch, naming the thread
 * (a module that fetches is built with QL_ABORTS: compiler.py). */
__attribute__((noreturn, noinline, cold)) QL_FN void ql_tex_bad(cudaTextureObject_t h) {
    ql_report(QL_CPU_ERROR_LAUNCH_FAILED, "texture fetch through 0x%llx, which is not a live "
              "texture object (pass a ql.Texture of this device, and do not close it while "
              "kernels or graphs use it), in block (%u, %u, %u), thread (%u, %u, %u)", h,
              blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
    ql_abort_thread();
}

QL_FN const ql_texture *ql_tex(cudaTextureObject_t h) {
    const ql_texture *t = (const ql_texture *)(uintptr_t)h;
    if (__builtin_expect(!t || t->magic != QL_TEXTURE_MAGIC, 0)) ql_tex_bad(h);
    return t;
}

QL_FN bool ql_tex_float_result(const ql_texture *t) {
    return t->format == 2 || t->read_normalized;
}

/* Unaligned, aliasing loads of texel channels (plain loads, not memcpy,
 * which a memcheck build replaces with its checked copy). */
typedef float ql_tex_f32 __attribute__((may_alias, aligned(1)));
typedef int ql_tex_i32 __attribute__((may_alias, aligned(1)));
typedef short ql_tex_i16 __attribute__((may_alias, aligned(1)));
typedef unsigned short ql_tex_u16 __attribute__((may_alias, aligned(1)));

/* Reads texel (x, y, z), already in range, converted. */
QL_FN void ql_tex_load(const ql_texture *t, int x, int y, int z, ql_texel *out) {
    const unsigned char *p = t->data + (size_t)z * t->slice_pitch + (size_t)y * t->row_pitch +
                             (size_t)x * t->channels * t->channel_bytes;
    for (unsigned c = 0; c < 4; ++c) { out->f[c] = 0.0f; out->i[c] = 0; }
    for (unsigned c = 0; c < t->channels; ++c) {
        const unsigned char *q = p + c * t->channel_bytes;
        if (t->format == 2) {
            if (t->channel_bytes == 4) out->f[c] = *(const ql_tex_f32 *)q;
            else out->f[c] = ql_h2f(*(const ql_tex_u16 *)q);
            continue;
        }
        int v;
        switch (t->channel_bytes * 2 + (t->format == 1)) {
        case 2: v = *(const signed char *)q; break;
        case 3: v = *q; break;
        case 4: v = *(const ql_tex_i16 *)q; break;
        case 5: v = *(const ql_tex_u16 *)q; break;
        default: v = *(const ql_tex_i32 *)q;
        }
        out->i[c] = v;
        if (t->read_normalized) {
            const unsigned bits = 8 * t->channel_bytes;
            if (t->format == 1) {
                out->f[c] = (float)v / (float)((1u << bits) - 1u);
            } else {
                float s = (float)v / (float)((1u << (bits - 1)) - 1u);
                out->f[c] = s < -1.0f ? -1.0f : s;
            }
        } else {
            out->f[c] = t->format == 1 ? (float)(unsigned)v : (float)v;
        }
    }
}

QL_FN void ql_tex_border(const ql_texture *t, ql_texel *out) {
    for (unsigned c = 0; c < 4; ++c) {
        const bool has = c < t->channels;
        out->f[c] = has ? t->border[c] : 0.0f;
        out->i[c] = has ? (int)t->border[c] : 0;
    }
}

/* A tap's index on one axis after the address mode; -1: the border. */
QL_FN int ql_tex_address(const ql_texture *t, int axis, long long i) {
    const long long n = t->extent[axis];
    unsigned mode = t->address[axis];
    if (!t->normalized_coords && (mode == cudaAddressModeWrap || mode == cudaAddressModeMirror))
        mode = cudaAddressModeClamp;
    switch (mode) {
    case cudaAddressModeBorder: return i < 0 || i >= n ? -1 : (int)i;
    case cudaAddressModeWrap: { long long j = i % n; return (int)(j < 0 ? j + n : j); }
    case cudaAddressModeMirror: {
        long long j = i % (2 * n);
        if (j < 0) j += 2 * n;
        return (int)(j >= n ? 2 * n - 1 - j : j);
    }
    default: return (int)(i < 0 ? 0 : i >= n ? n - 1 : i);
    }
}

/* The coordinate on one axis in texels (normalised ones scaled), bounded so
 * that its floor is an integer (NaN reads as the lower bound). */
QL_FN float ql_tex_scaled(const ql_texture *t, int axis, float x) {
    /* the float product, correctly rounded (exact in double, then rounded
     * once), never fused with the - 0.5 that follows under -ffp-contract */
    if (t->normalized_coords) x = (float)((double)x * (double)t->extent[axis]);
    x = fmaxf(x, -1073741824.0f);
    return fminf(x, 1073741824.0f);
}

/* The 9-bit fixed-point weight (8 fractional bits) of frac(x). */
QL_FN float ql_tex_weight(float frac) {
    return floorf(frac * 256.0f + 0.5f) * (1.0f / 256.0f);
}

/* Fetch at texel-space coordinates (up to three axes). */
QL_FN void ql_tex_sample(const ql_texture *t, float x, float y, float z, ql_texel *out) {
    const float c[3] = {x, y, z};
    const unsigned dims = t->dims;
    if (t->filter != cudaFilterModeLinear || !ql_tex_float_result(t)) {
        int idx[3] = {0, 0, 0};
        for (unsigned a = 0; a < dims; ++a) {
            idx[a] = ql_tex_address(t, (int)a, (long long)floorf(ql_tex_scaled(t, (int)a, c[a])));
            if (idx[a] < 0) { ql_tex_border(t, out); return; }
        }
        ql_tex_load(t, idx[0], idx[1], idx[2], out);
        return;
    }
    int lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    float w[3] = {0.0f, 0.0f, 0.0f};
    for (unsigned a = 0; a < dims; ++a) {
        const float u = ql_tex_scaled(t, (int)a, c[a]) - 0.5f;
        const float f = floorf(u);
        w[a] = ql_tex_weight(u - f);
        lo[a] = ql_tex_address(t, (int)a, (long long)f);
        hi[a] = ql_tex_address(t, (int)a, (long long)f + 1);
    }
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const unsigned taps = 1u << dims;
    for (unsigned k = 0; k < taps; ++k) {
        /* tap k: bit a set = the upper texel on axis a (x varies fastest) */
        float wk = 1.0f;
        int idx[3] = {0, 0, 0};
        bool border = false;
        for (unsigned a = 0; a < dims; ++a) {
            const bool up = (k >> a) & 1u;
            wk *= up ? w[a] : 1.0f - w[a];
            idx[a] = up ? hi[a] : lo[a];
            border |= idx[a] < 0;
        }
        ql_texel v;
        if (border) ql_tex_border(t, &v);
        else ql_tex_load(t, idx[0], idx[1], idx[2], &v);
        for (unsigned ch = 0; ch < 4; ++ch) acc[ch] += wk * v.f[ch];
    }
    for (unsigned ch = 0; ch < 4; ++ch) { out->f[ch] = acc[ch]; out->i[ch] = (int)acc[ch]; }
}

/* The texel as the fetch's result type. */
template <class T> struct ql_tex_result;
#define QL_TEX_SCALAR(T, field)                                                    \
    template <> struct ql_tex_result<T> {                                          \
        static T make(const ql_texel &v) { return (T)v.field[0]; }                 \
    };
#define QL_TEX_VECTOR(V, T, field)                                                 \
    template <> struct ql_tex_result<V##1> {                                       \
        static V##1 make(const ql_texel &v) { return V##1{(T)v.field[0]}; }        \
    };                                                                             \
    template <> struct ql_tex_result<V##2> {                                       \
        static V##2 make(const ql_texel &v) {                                      \
            return V##2{(T)v.field[0], (T)v.field[1]};                             \
        }                                                                          \
    };                                                                             \
    template <> struct ql_tex_result<V##4> {                                       \
        static V##4 make(const ql_texel &v) {                                      \
            return V##4{(T)v.field[0], (T)v.field[1], (T)v.field[2], (T)v.field[3]};\
        }                                                                          \
    };
QL_TEX_SCALAR(float, f)
QL_TEX_SCALAR(char, i)
QL_TEX_SCALAR(signed char, i)
QL_TEX_SCALAR(unsigned char, i)
QL_TEX_SCALAR(short, i)
QL_TEX_SCALAR(unsigned short, i)
QL_TEX_SCALAR(int, i)
QL_TEX_SCALAR(unsigned int, i)
QL_TEX_VECTOR(float, float, f)
QL_TEX_VECTOR(char, signed char, i)
QL_TEX_VECTOR(uchar, unsigned char, i)
QL_TEX_VECTOR(short, short, i)
QL_TEX_VECTOR(ushort, unsigned short, i)
QL_TEX_VECTOR(int, int, i)
QL_TEX_VECTOR(uint, unsigned int, i)
#undef QL_TEX_SCALAR
#undef QL_TEX_VECTOR

/* Every read of a descriptor or of texels is in the QL_FN functions above
 * (which a memcheck build does not instrument: the addressing keeps them in
 * range); the templates below only convert and store. */
QL_FN void ql_tex_fetch(cudaTextureObject_t h, int x, ql_texel *v) {
    const ql_texture *t = ql_tex(h);
    if (x < 0 || (unsigned)x >= t->extent[0]) {
        for (unsigned c = 0; c < 4; ++c) { v->f[c] = 0.0f; v->i[c] = 0; }
    } else {
        ql_tex_load(t, x, 0, 0, v);
    }
}

template <class T> static inline T tex1Dfetch(cudaTextureObject_t h, int x) {
    ql_texel v;
    ql_tex_fetch(h, x, &v);
    return ql_tex_result<T>::make(v);
}
template <class T> static inline T tex1D(cudaTextureObject_t h, float x) {
    ql_texel v;
    ql_tex_sample(ql_tex(h), x, 0.0f, 0.0f, &v);
    return ql_tex_result<T>::make(v);
}
template <class T> static inline T tex2D(cudaTextureObject_t h, float x, float y) {
    ql_texel v;
    ql_tex_sample(ql_tex(h), x, y, 0.0f, &v);
    return ql_tex_result<T>::make(v);
}
template <class T> static inline T tex3D(cudaTextureObject_t h, float x, float y, float z) {
    ql_texel v;
    ql_tex_sample(ql_tex(h), x, y, z, &v);
    return ql_tex_result<T>::make(v);
}
/* One mipmap level: the *Lod forms read level 0. */
template <class T> static inline T tex1DLod(cudaTextureObject_t h, float x, float) {
    return tex1D<T>(h, x);
}
template <class T> static inline T tex2DLod(cudaTextureObject_t h, float x, float y, float) {
    return tex2D<T>(h, x, y);
}
template <class T> static inline T tex3DLod(cudaTextureObject_t h, float x, float y, float z,
                                            float) {
    return tex3D<T>(h, x, y, z);
}
/* The pointer-output overloads. */
template <class T> static inline void tex1Dfetch(T *r, cudaTextureObject_t h, int x) {
    *r = tex1Dfetch<T>(h, x);
}
template <class T> static inline void tex1D(T *r, cudaTextureObject_t h, float x) {
    *r = tex1D<T>(h, x);
}
template <class T> static inline void tex2D(T *r, cudaTextureObject_t h, float x, float y) {
    *r = tex2D<T>(h, x, y);
}
template <class T> static inline void tex3D(T *r, cudaTextureObject_t h, float x, float y,
                                            float z) {
    *r = tex3D<T>(h, x, y, z);
}

#endif /* QL_TEXTURE_H */
