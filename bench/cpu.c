/* bench/cpu.c: workload w5, a pure CPU loop that makes no system call while
 * it runs, so any overhead it shows is the supervisor's presence alone. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* usage: cpu ROUNDS; prints a checksum so the loop cannot be optimised away */
int main(int argc, char **argv)
{
	uint64_t x = 88172645463325252ull, sum = 0;
	long rounds = argc > 1 ? atol(argv[1]) : 100000000L;

	for (long i = 0; i < rounds; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		sum += x;
	}
	printf("%llu\n", (unsigned long long)sum);
	return 0;
}
