/* sq.c: the library under test. */
int sq(int x) { return x * x; }
