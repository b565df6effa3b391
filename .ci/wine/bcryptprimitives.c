/* Wine 8 has no bcryptprimitives.dll, whose ProcessPrng Rust's standard
 * library calls for random bytes on Windows (since Rust 1.78). This DLL
 * gives Wine one: ProcessPrng fills the buffer with advapi32's
 * SystemFunction036 (RtlGenRandom), which Wine has. For CI only: .ci/run
 * builds it with mingw and copies it into the Wine prefix's system32. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!SystemFunction036(data, n))
            return FALSE;
        data += n;
        len -= n;
    }
    return TRUE;
}
