"""zpp_torch's stand-in: importing it is what registers the backend."""
imported = True
