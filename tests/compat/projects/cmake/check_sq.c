/* check_sq.c: a ctest test; --fail makes it fail on purpose. */
#include <stdio.h>
#include <string.h>
int sq(int x);
int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--fail") == 0)
		return 1;
	for (int i = 0; i < 10; i++)
		if (sq(i) != i * i)
			return 1;
	puts("squares ok");
	return 0;
}
