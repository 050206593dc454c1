"""``lockgate cost``: the example traffic metered as deployed, priced with dated AWS list prices."""
