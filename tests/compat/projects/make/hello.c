/* hello.c: built by the make project. */
#include <stdio.h>
int main(void) { puts("hello, make"); return 0; }
