"""The inbox: one stored item per delivery, a queue of pointers, leases."""
