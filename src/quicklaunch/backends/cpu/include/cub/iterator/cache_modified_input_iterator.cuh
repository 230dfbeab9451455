/* cub::CacheModifiedInputIterator for the quicklaunch CPU device: a pointer
 * whose reads go through cub::ThreadLoad<MODIFIER> (plain reads on a CPU). */
#ifndef QL_CUB_CACHE_MODIFIED_INPUT_ITERATOR_CUH
#define QL_CUB_CACHE_MODIFIED_INPUT_ITERATOR_CUH

#include "../thread/thread_load.cuh"

namespace cub {

template <CacheLoadModifier M, class ValueType, class OffsetT = ptrdiff_t>
class CacheModifiedInputIterator {
  public:
    typedef ValueType value_type;
    typedef OffsetT difference_type;
    ValueType *ptr;
    template <class Q> CacheModifiedInputIterator(Q *p) : ptr(const_cast<ValueType *>(p)) {}
    ValueType operator*() const { return ThreadLoad<M>(ptr); }
    ValueType operator[](OffsetT n) const { return ThreadLoad<M>(ptr + n); }
    CacheModifiedInputIterator operator+(OffsetT n) const {
        return CacheModifiedInputIterator(ptr + n);
    }
    CacheModifiedInputIterator operator-(OffsetT n) const {
        return CacheModifiedInputIterator(ptr - n);
    }
    OffsetT operator-(const CacheModifiedInputIterator &o) const { return (OffsetT)(ptr - o.ptr); }
    CacheModifiedInputIterator &operator+=(OffsetT n) {
        ptr += n;
        return *this;
    }
    CacheModifiedInputIterator &operator++() {
        ++ptr;
        return *this;
    }
    CacheModifiedInputIterator operator++(int) {
        CacheModifiedInputIterator r = *this;
        ++ptr;
        return r;
    }
    bool operator==(const CacheModifiedInputIterator &o) const { return ptr == o.ptr; }
    bool operator!=(const CacheModifiedInputIterator &o) const { return ptr != o.ptr; }
};

}  // namespace cub

#endif /* QL_CUB_CACHE_MODIFIED_INPUT_ITERATOR_CUH */
