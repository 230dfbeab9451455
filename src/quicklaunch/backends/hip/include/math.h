/* math.h for hiprtc (quicklaunch.hip): the math functions are part of HIP's
 * device runtime and INFINITY / NAN come with the prelude; this stand-in
 * keeps hiprtc from reaching the host's /usr/include/math.h. */
#ifndef QL_HIP_MATH_H
#define QL_HIP_MATH_H
#endif
