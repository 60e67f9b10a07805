from spaces import moved as _moved

_moved.install()  # old import paths of moved modules (spaces.moved.MOVED) keep working, with a warning
