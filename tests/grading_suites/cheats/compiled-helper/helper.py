def expected():
    return 1
