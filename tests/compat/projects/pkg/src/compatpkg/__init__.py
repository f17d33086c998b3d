"""A tiny package: built into a wheel and installed offline."""


def hello():
    return "hello from compatpkg"


def main():
    print(hello())
