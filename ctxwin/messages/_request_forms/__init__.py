"""One ``RequestForm`` per provider request form (``form``: the interface), each in its own module, found by name
in ``registry``."""
