/* The <type_traits> members neither NVRTC nor hiprtc 5.2 provides; the
 * devices' <type_traits> stand-ins include this after their own basics
 * (integral_constant, is_same, enable_if, is_integral, is_floating_point,
 * is_arithmetic, is_signed). */
#pragma once

namespace std {
template <bool B, class T = void> using enable_if_t = typename enable_if<B, T>::type;

template <bool B, class T, class F> struct conditional { typedef T type; };
template <class T, class F> struct conditional<false, T, F> { typedef F type; };
template <bool B, class T, class F> using conditional_t = typename conditional<B, T, F>::type;

template <class T> struct remove_const { typedef T type; };
template <class T> struct remove_const<const T> { typedef T type; };
template <class T> struct remove_volatile { typedef T type; };
template <class T> struct remove_volatile<volatile T> { typedef T type; };
template <class T> struct remove_cv {
    typedef typename remove_volatile<typename remove_const<T>::type>::type type;
};
template <class T> struct remove_reference { typedef T type; };
template <class T> struct remove_reference<T &> { typedef T type; };
template <class T> struct remove_reference<T &&> { typedef T type; };
template <class T> struct remove_pointer { typedef T type; };
template <class T> struct remove_pointer<T *> { typedef T type; };
template <class T> struct remove_pointer<T *const> { typedef T type; };
template <class T> using remove_cv_t = typename remove_cv<T>::type;
template <class T> using remove_const_t = typename remove_const<T>::type;
template <class T> using remove_reference_t = typename remove_reference<T>::type;
template <class T> using remove_pointer_t = typename remove_pointer<T>::type;
template <class T> struct decay { typedef remove_cv_t<remove_reference_t<T>> type; };
template <class T> using decay_t = typename decay<T>::type;

template <class T> struct is_const : false_type {};
template <class T> struct is_const<const T> : true_type {};
template <class T> struct is_pointer_ : false_type {};
template <class T> struct is_pointer_<T *> : true_type {};
template <class T> struct is_pointer : is_pointer_<remove_cv_t<T>> {};
template <class T> struct is_reference : false_type {};
template <class T> struct is_reference<T &> : true_type {};
template <class T> struct is_reference<T &&> : true_type {};

template <class T> struct is_unsigned
    : integral_constant<bool, is_arithmetic<T>::value && !is_signed<T>::value> {};
}  // namespace std
