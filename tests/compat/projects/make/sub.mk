# A recursive make: writes a file and reads it back.
all:
	echo generated > gen.txt
	test "$$(cat gen.txt)" = generated
