"""Temperatures in Celsius and Fahrenheit."""
