import util

print(util.VERSION)
