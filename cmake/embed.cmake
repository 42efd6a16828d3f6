# Embeds the text file IN as a NUL-terminated C string named SYM in OUT.
file(READ ${IN} HEX HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," HEX "${HEX}")
file(WRITE ${OUT} "/* generated from ${IN} */\nconst char ${SYM}[] = {${HEX} 0x00};\n")
