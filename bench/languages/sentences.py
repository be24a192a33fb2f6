#!/usr/bin/env python3
"""The multilingual benchmark's sentences (bench/languages/README.md), made from templates and word
lists written for it: for each of English, German and Spanish, 700 training and 40 held-out sentences
(none in both), 5-15 words each, 30% of them with digits (quantities, years, times, dates, prices in
euros, ordinals, decimals, percentages) so that the multilingual cleaner's number reading is trained.

    python3 sentences.py OUT_DIR [--train 700] [--heldout 40] [--seed 1]

writes OUT_DIR/{en,de,es}-{train,heldout}.tsv (id<TAB>sentence, ids like en-0001; held-out ids go on
from the training ids). The three languages share one concept list (each noun, verb, adjective, place
and time in all three) and parallel templates, so their sentences are alike in length and content;
each language draws its own sentences. German nouns carry their gender and plural (articles and
adjective endings are declined by case), Spanish nouns their gender (articles and adjectives agree,
"a el" is "al", animate objects take the personal "a"), English picks "a" or "an".
"""
import argparse
import os
import random
import re

LANGUAGES = ('en', 'de', 'es')

# Nouns: category | en singular,plural | de gender:singular,plural | es gender:singular,plural.
# Categories: T thing, F food, A animal, P person, B building.
NOUNS = """
T|book,books|n:Buch,Bücher|m:libro,libros
T|table,tables|m:Tisch,Tische|f:mesa,mesas
T|chair,chairs|m:Stuhl,Stühle|f:silla,sillas
T|lamp,lamps|f:Lampe,Lampen|f:lámpara,lámparas
T|key,keys|m:Schlüssel,Schlüssel|f:llave,llaves
T|bag,bags|f:Tasche,Taschen|m:bolso,bolsos
T|letter,letters|m:Brief,Briefe|f:carta,cartas
T|bicycle,bicycles|n:Fahrrad,Fahrräder|f:bicicleta,bicicletas
T|car,cars|n:Auto,Autos|m:coche,coches
T|clock,clocks|f:Uhr,Uhren|m:reloj,relojes
T|bottle,bottles|f:Flasche,Flaschen|f:botella,botellas
T|cup,cups|f:Tasse,Tassen|f:taza,tazas
T|plate,plates|m:Teller,Teller|m:plato,platos
T|box,boxes|f:Kiste,Kisten|f:caja,cajas
T|picture,pictures|n:Bild,Bilder|m:cuadro,cuadros
T|ticket,tickets|f:Fahrkarte,Fahrkarten|m:billete,billetes
T|umbrella,umbrellas|m:Schirm,Schirme|m:paraguas,paraguas
T|shirt,shirts|n:Hemd,Hemden|f:camisa,camisas
T|jacket,jackets|f:Jacke,Jacken|f:chaqueta,chaquetas
T|shoe,shoes|m:Schuh,Schuhe|m:zapato,zapatos
T|hat,hats|m:Hut,Hüte|m:sombrero,sombreros
T|newspaper,newspapers|f:Zeitung,Zeitungen|m:periódico,periódicos
T|map,maps|f:Landkarte,Landkarten|m:mapa,mapas
T|pen,pens|m:Stift,Stifte|m:bolígrafo,bolígrafos
T|computer,computers|m:Computer,Computer|m:ordenador,ordenadores
T|telephone,telephones|n:Telefon,Telefone|m:teléfono,teléfonos
T|radio,radios|n:Radio,Radios|f:radio,radios
T|mirror,mirrors|m:Spiegel,Spiegel|m:espejo,espejos
T|basket,baskets|m:Korb,Körbe|f:cesta,cestas
T|candle,candles|f:Kerze,Kerzen|f:vela,velas
T|blanket,blankets|f:Decke,Decken|f:manta,mantas
T|ring,rings|m:Ring,Ringe|m:anillo,anillos
T|boat,boats|n:Boot,Boote|m:barco,barcos
T|ladder,ladders|f:Leiter,Leitern|f:escalera,escaleras
T|camera,cameras|f:Kamera,Kameras|f:cámara,cámaras
T|guitar,guitars|f:Gitarre,Gitarren|f:guitarra,guitarras
T|ball,balls|m:Ball,Bälle|f:pelota,pelotas
T|suitcase,suitcases|m:Koffer,Koffer|f:maleta,maletas
T|wallet,wallets|f:Geldbörse,Geldbörsen|f:cartera,carteras
T|present,presents|n:Geschenk,Geschenke|m:regalo,regalos
T|sofa,sofas|n:Sofa,Sofas|m:sofá,sofás
T|bed,beds|n:Bett,Betten|f:cama,camas
T|notebook,notebooks|n:Heft,Hefte|m:cuaderno,cuadernos
T|window,windows|n:Fenster,Fenster|f:ventana,ventanas
T|door,doors|f:Tür,Türen|f:puerta,puertas
T|kite,kites|m:Drachen,Drachen|f:cometa,cometas
F|apple,apples|m:Apfel,Äpfel|f:manzana,manzanas
F|cake,cakes|m:Kuchen,Kuchen|f:tarta,tartas
F|orange,oranges|f:Orange,Orangen|f:naranja,naranjas
F|egg,eggs|n:Ei,Eier|m:huevo,huevos
F|tomato,tomatoes|f:Tomate,Tomaten|m:tomate,tomates
F|potato,potatoes|f:Kartoffel,Kartoffeln|f:patata,patatas
F|lemon,lemons|f:Zitrone,Zitronen|m:limón,limones
F|pear,pears|f:Birne,Birnen|f:pera,peras
F|banana,bananas|f:Banane,Bananen|m:plátano,plátanos
F|sandwich,sandwiches|n:Brötchen,Brötchen|m:bocadillo,bocadillos
F|biscuit,biscuits|m:Keks,Kekse|f:galleta,galletas
F|onion,onions|f:Zwiebel,Zwiebeln|f:cebolla,cebollas
F|carrot,carrots|f:Karotte,Karotten|f:zanahoria,zanahorias
F|melon,melons|f:Melone,Melonen|m:melón,melones
F|sausage,sausages|f:Wurst,Würste|f:salchicha,salchichas
F|soup,soups|f:Suppe,Suppen|f:sopa,sopas
F|pizza,pizzas|f:Pizza,Pizzas|f:pizza,pizzas
F|cucumber,cucumbers|f:Gurke,Gurken|m:pepino,pepinos
F|peach,peaches|m:Pfirsich,Pfirsiche|m:melocotón,melocotones
A|dog,dogs|m:Hund,Hunde|m:perro,perros
A|cat,cats|f:Katze,Katzen|m:gato,gatos
A|horse,horses|n:Pferd,Pferde|m:caballo,caballos
A|bird,birds|m:Vogel,Vögel|m:pájaro,pájaros
A|cow,cows|f:Kuh,Kühe|f:vaca,vacas
A|sheep,sheep|n:Schaf,Schafe|f:oveja,ovejas
A|goat,goats|f:Ziege,Ziegen|f:cabra,cabras
A|duck,ducks|f:Ente,Enten|m:pato,patos
A|rabbit,rabbits|n:Kaninchen,Kaninchen|m:conejo,conejos
A|fish,fish|m:Fisch,Fische|m:pez,peces
A|mouse,mice|f:Maus,Mäuse|m:ratón,ratones
A|pig,pigs|n:Schwein,Schweine|m:cerdo,cerdos
A|hen,hens|n:Huhn,Hühner|f:gallina,gallinas
A|donkey,donkeys|m:Esel,Esel|m:burro,burros
A|fox,foxes|m:Fuchs,Füchse|m:zorro,zorros
A|owl,owls|f:Eule,Eulen|m:búho,búhos
A|frog,frogs|m:Frosch,Frösche|f:rana,ranas
P|teacher,teachers|f:Lehrerin,Lehrerinnen|f:profesora,profesoras
P|doctor,doctors|m:Arzt,Ärzte|m:médico,médicos
P|baker,bakers|m:Bäcker,Bäcker|m:panadero,panaderos
P|nurse,nurses|f:Pflegerin,Pflegerinnen|f:enfermera,enfermeras
P|child,children|n:Kind,Kinder|m:niño,niños
P|girl,girls|n:Mädchen,Mädchen|f:niña,niñas
P|woman,women|f:Frau,Frauen|f:mujer,mujeres
P|man,men|m:Mann,Männer|m:hombre,hombres
P|driver,drivers|m:Fahrer,Fahrer|m:conductor,conductores
P|cook,cooks|f:Köchin,Köchinnen|f:cocinera,cocineras
P|farmer,farmers|m:Landwirt,Landwirte|m:granjero,granjeros
P|waiter,waiters|m:Kellner,Kellner|m:camarero,camareros
P|singer,singers|f:Sängerin,Sängerinnen|f:cantante,cantantes
P|grandmother,grandmothers|f:Großmutter,Großmütter|f:abuela,abuelas
P|uncle,uncles|m:Onkel,Onkel|m:tío,tíos
P|friend,friends|m:Freund,Freunde|m:amigo,amigos
P|neighbour,neighbours|f:Nachbarin,Nachbarinnen|f:vecina,vecinas
P|postman,postmen|m:Briefträger,Briefträger|m:cartero,carteros
P|painter,painters|m:Maler,Maler|m:pintor,pintores
B|house,houses|n:Haus,Häuser|f:casa,casas
B|church,churches|f:Kirche,Kirchen|f:iglesia,iglesias
B|bridge,bridges|f:Brücke,Brücken|m:puente,puentes
B|tower,towers|m:Turm,Türme|f:torre,torres
B|castle,castles|n:Schloss,Schlösser|m:castillo,castillos
B|shop,shops|m:Laden,Läden|f:tienda,tiendas
B|museum,museums|n:Museum,Museen|m:museo,museos
B|school,schools|f:Schule,Schulen|f:escuela,escuelas
B|hotel,hotels|n:Hotel,Hotels|m:hotel,hoteles
B|library,libraries|f:Bibliothek,Bibliotheken|f:biblioteca,bibliotecas
B|hospital,hospitals|n:Krankenhaus,Krankenhäuser|m:hospital,hospitales
B|theatre,theatres|n:Theater,Theater|m:teatro,teatros
B|station,stations|m:Bahnhof,Bahnhöfe|f:estación,estaciones
B|windmill,windmills|f:Windmühle,Windmühlen|m:molino,molinos
"""

# Transitive verbs: object categories | en 3sg,infinitive,past | de 3sg,infinitive,participle (with
# "hat") | es 3sg,infinitive,preterite.
TRANSITIVE = """
TF|buys,buy,bought|kauft,kaufen,gekauft|compra,comprar,compró
TFAPB|sees,see,saw|sieht,sehen,gesehen|ve,ver,vio
TA|finds,find,found|findet,finden,gefunden|encuentra,encontrar,encontró
TAP|looks for,look for,looked for|sucht,suchen,gesucht|busca,buscar,buscó
TF|needs,need,needed|braucht,brauchen,gebraucht|necesita,necesitar,necesitó
T|carries,carry,carried|trägt,tragen,getragen|lleva,llevar,llevó
TAB|paints,paint,painted|malt,malen,gemalt|pinta,pintar,pintó
T|repairs,repair,repaired|repariert,reparieren,repariert|arregla,arreglar,arregló
TFA|sells,sell,sold|verkauft,verkaufen,verkauft|vende,vender,vendió
F|eats,eat,ate|isst,essen,gegessen|come,comer,comió
F|cooks,cook,cooked|kocht,kochen,gekocht|cocina,cocinar,cocinó
TAF|washes,wash,washed|wäscht,waschen,gewaschen|lava,lavar,lavó
A|feeds,feed,fed|füttert,füttern,gefüttert|alimenta,alimentar,alimentó
PB|visits,visit,visited|besucht,besuchen,besucht|visita,visitar,visitó
P|asks,ask,asked|fragt,fragen,gefragt|pregunta,preguntar,preguntó
P|greets,greet,greeted|begrüßt,begrüßen,begrüßt|saluda,saludar,saludó
TAPB|photographs,photograph,photographed|fotografiert,fotografieren,fotografiert|fotografía,fotografiar,fotografió
TF|brings,bring,brought|bringt,bringen,gebracht|trae,traer,trajo
T|hides,hide,hid|versteckt,verstecken,versteckt|esconde,esconder,escondió
TAFB|draws,draw,drew|zeichnet,zeichnen,gezeichnet|dibuja,dibujar,dibujó
T|loses,lose,lost|verliert,verlieren,verloren|pierde,perder,perdió
T|forgets,forget,forgot|vergisst,vergessen,vergessen|olvida,olvidar,olvidó
F|cuts,cut,cut|schneidet,schneiden,geschnitten|corta,cortar,cortó
TFA|counts,count,counted|zählt,zählen,gezählt|cuenta,contar,contó
TF|orders,order,ordered|bestellt,bestellen,bestellt|pide,pedir,pidió
A|catches,catch,caught|fängt,fangen,gefangen|atrapa,atrapar,atrapó
AP|watches,watch,watched|beobachtet,beobachten,beobachtet|observa,observar,observó
TB|cleans,clean,cleaned|putzt,putzen,geputzt|limpia,limpiar,limpió
TB|builds,build,built|baut,bauen,gebaut|construye,construir,construyó
TFA|chooses,choose,chose|wählt,wählen,gewählt|elige,elegir,eligió
"""

# Intransitive verbs: subject categories | en 3sg,infinitive,past | de 3sg,infinitive,participle,
# auxiliary (h haben, s sein) | es 3sg,infinitive,preterite.
INTRANSITIVE = """
PA|sleeps,sleep,slept|schläft,schlafen,geschlafen,h|duerme,dormir,durmió
PA|waits,wait,waited|wartet,warten,gewartet,h|espera,esperar,esperó
P|works,work,worked|arbeitet,arbeiten,gearbeitet,h|trabaja,trabajar,trabajó
P|laughs,laugh,laughed|lacht,lachen,gelacht,h|ríe,reír,rio
PA|sings,sing,sang|singt,singen,gesungen,h|canta,cantar,cantó
P|dances,dance,danced|tanzt,tanzen,getanzt,h|baila,bailar,bailó
P|reads,read,read|liest,lesen,gelesen,h|lee,leer,leyó
P|writes,write,wrote|schreibt,schreiben,geschrieben,h|escribe,escribir,escribió
PA|runs,run,ran|läuft,laufen,gelaufen,s|corre,correr,corrió
PA|swims,swim,swam|schwimmt,schwimmen,geschwommen,s|nada,nadar,nadó
PA|plays,play,played|spielt,spielen,gespielt,h|juega,jugar,jugó
P|cooks,cook,cooked|kocht,kochen,gekocht,h|cocina,cocinar,cocinó
P|studies,study,studied|lernt,lernen,gelernt,h|estudia,estudiar,estudió
PA|walks,walk,walked|wandert,wandern,gewandert,s|camina,caminar,caminó
P|paints,paint,painted|malt,malen,gemalt,h|pinta,pintar,pintó
P|whistles,whistle,whistled|pfeift,pfeifen,gepfiffen,h|silba,silbar,silbó
PA|cries,cry,cried|weint,weinen,geweint,h|llora,llorar,lloró
P|talks,talk,talked|redet,reden,geredet,h|habla,hablar,habló
P|travels,travel,travelled|reist,reisen,gereist,s|viaja,viajar,viajó
PA|climbs,climb,climbed|klettert,klettern,geklettert,s|trepa,trepar,trepó
PA|rests,rest,rested|rastet,rasten,gerastet,h|descansa,descansar,descansó
"""

# Verbs with two objects (someone, something): en 3sg,inf,past | de 3sg,inf,participle | es 3sg,inf,preterite.
DITRANSITIVE = """
gives,give,gave|gibt,geben,gegeben|da,dar,dio
shows,show,showed|zeigt,zeigen,gezeigt|enseña,enseñar,enseñó
sends,send,sent|schickt,schicken,geschickt|envía,enviar,envió
brings,bring,brought|bringt,bringen,gebracht|lleva,llevar,llevó
sells,sell,sold|verkauft,verkaufen,verkauft|vende,vender,vendió
lends,lend,lent|leiht,leihen,geliehen|presta,prestar,prestó
"""

# Adjectives: the categories they describe | en | de (base, or base/declension stem) | es masculine,
# feminine,copula (ser or estar, for the predicate).
ADJECTIVES = """
TAPB|big|groß|grande,grande,ser
TAPB|small|klein|pequeño,pequeña,ser
TAPB|old|alt|viejo,vieja,ser
TB|new|neu|nuevo,nueva,ser
TB|red|rot|rojo,roja,ser
TB|blue|blau|azul,azul,ser
TFB|green|grün|verde,verde,ser
TFA|yellow|gelb|amarillo,amarilla,ser
TAB|black|schwarz|negro,negra,ser
TAB|white|weiß|blanco,blanca,ser
TA|brown|braun|marrón,marrón,ser
TF|heavy|schwer|pesado,pesada,ser
T|light|leicht|ligero,ligera,ser
TB|expensive|teuer/teur|caro,cara,ser
TF|cheap|billig|barato,barata,ser
TAPB|beautiful|schön|bonito,bonita,ser
TAB|ugly|hässlich|feo,fea,ser
TAB|clean|sauber|limpio,limpia,estar
TAB|dirty|schmutzig|sucio,sucia,estar
TAP|wet|nass|mojado,mojada,estar
TF|dry|trocken|seco,seca,estar
TF|warm|warm|caliente,caliente,estar
TF|cold|kalt|frío,fría,estar
T|full|voll|lleno,llena,estar
TB|empty|leer|vacío,vacía,estar
AP|tired|müde|cansado,cansada,estar
AP|happy|glücklich|contento,contenta,estar
AP|hungry|hungrig|hambriento,hambrienta,estar
APB|quiet|ruhig|tranquilo,tranquila,estar
AP|loud|laut|ruidoso,ruidosa,ser
TAP|fast|schnell|rápido,rápida,ser
TAP|slow|langsam|lento,lenta,ser
AP|young|jung|joven,joven,ser
AP|friendly|freundlich|amable,amable,ser
AP|clever|klug|listo,lista,ser
AP|strong|stark|fuerte,fuerte,ser
TF|soft|weich|blando,blanda,estar
TF|round|rund|redondo,redonda,ser
F|fresh|frisch|fresco,fresca,estar
F|sweet|süß|dulce,dulce,ser
F|sour|sauer/saur|ácido,ácida,ser
F|ripe|reif|maduro,madura,estar
PB|famous|berühmt|famoso,famosa,ser
B|tall|hoch/hoh|alto,alta,ser
T|long|lang|largo,larga,ser
T|short|kurz|corto,corta,ser
TAPB|strange|seltsam|extraño,extraña,ser
TAPB|wonderful|wunderbar|maravilloso,maravillosa,ser
TB|modern|modern|moderno,moderna,ser
A|wild|wild|salvaje,salvaje,ser
AP|sad|traurig|triste,triste,estar
"""

# Places: en where;to where | de wo;wohin | es where;to where.
PLACES = """
in the park;to the park|im Park;in den Park|en el parque;al parque
in the kitchen;to the kitchen|in der Küche;in die Küche|en la cocina;a la cocina
at the station;to the station|am Bahnhof;zum Bahnhof|en la estación;a la estación
in the garden;to the garden|im Garten;in den Garten|en el jardín;al jardín
at the market;to the market|auf dem Markt;auf den Markt|en el mercado;al mercado
in the town centre;to the town centre|in der Innenstadt;in die Innenstadt|en el centro;al centro
on the beach;to the beach|am Strand;an den Strand|en la playa;a la playa
in the forest;to the forest|im Wald;in den Wald|en el bosque;al bosque
at home;home|zu Hause;nach Hause|en casa;a casa
in the office;to the office|im Büro;ins Büro|en la oficina;a la oficina
in the village;to the village|im Dorf;ins Dorf|en el pueblo;al pueblo
on the mountain;up the mountain|auf dem Berg;auf den Berg|en la montaña;a la montaña
by the river;to the river|am Fluss;zum Fluss|junto al río;al río
at the airport;to the airport|am Flughafen;zum Flughafen|en el aeropuerto;al aeropuerto
in the library;to the library|in der Bibliothek;in die Bibliothek|en la biblioteca;a la biblioteca
at school;to school|in der Schule;in die Schule|en la escuela;a la escuela
in the hotel;to the hotel|im Hotel;ins Hotel|en el hotel;al hotel
in the living room;to the living room|im Wohnzimmer;ins Wohnzimmer|en el salón;al salón
on the balcony;to the balcony|auf dem Balkon;auf den Balkon|en el balcón;al balcón
in the street;to the street|auf der Straße;auf die Straße|en la calle;a la calle
at the harbour;to the harbour|im Hafen;zum Hafen|en el puerto;al puerto
by the lake;to the lake|am See;zum See|junto al lago;al lago
in the museum;to the museum|im Museum;ins Museum|en el museo;al museo
on the farm;to the farm|auf dem Bauernhof;auf den Bauernhof|en la granja;a la granja
in the square;to the square|auf dem Platz;auf den Platz|en la plaza;a la plaza
in the bakery;to the bakery|in der Bäckerei;in die Bäckerei|en la panadería;a la panadería
at the zoo;to the zoo|im Zoo;in den Zoo|en el zoo;al zoo
at the cinema;to the cinema|im Kino;ins Kino|en el cine;al cine
at the swimming pool;to the swimming pool|im Schwimmbad;ins Schwimmbad|en la piscina;a la piscina
in the cellar;to the cellar|im Keller;in den Keller|en el sótano;al sótano
in the attic;to the attic|auf dem Dachboden;auf den Dachboden|en el desván;al desván
at the hospital;to the hospital|im Krankenhaus;ins Krankenhaus|en el hospital;al hospital
"""

# Times: kind (past, hab habitual, fut) | en | de | es.
TIMES = """
past|yesterday|gestern|ayer
past|last week|letzte Woche|la semana pasada
past|last year|letztes Jahr|el año pasado
past|last summer|letzten Sommer|el verano pasado
past|last winter|letzten Winter|el invierno pasado
past|last Monday|letzten Montag|el lunes pasado
past|last Friday|letzten Freitag|el viernes pasado
past|last night|gestern Abend|anoche
past|two days ago|vor zwei Tagen|hace dos días
hab|every day|jeden Tag|todos los días
hab|in the morning|morgens|por la mañana
hab|in the evening|abends|por la noche
hab|at noon|mittags|al mediodía
hab|in winter|im Winter|en invierno
hab|in summer|im Sommer|en verano
hab|in spring|im Frühling|en primavera
hab|in autumn|im Herbst|en otoño
hab|on Mondays|montags|los lunes
hab|on Wednesdays|mittwochs|los miércoles
hab|on Saturdays|samstags|los sábados
hab|on Sundays|sonntags|los domingos
hab|often|oft|a menudo
hab|sometimes|manchmal|a veces
hab|every week|jede Woche|cada semana
fut|tomorrow|morgen|mañana
fut|next week|nächste Woche|la semana que viene
fut|next Tuesday|nächsten Dienstag|el próximo martes
fut|next Thursday|nächsten Donnerstag|el próximo jueves
fut|tomorrow evening|morgen Abend|mañana por la noche
fut|next summer|nächsten Sommer|el próximo verano
fut|at the weekend|am Wochenende|el fin de semana
fut|next year|nächstes Jahr|el año que viene
"""

NAMES = {  # name:gender
    'en': 'Anna:f Peter:m Lucy:f Mark:m Emma:f David:m Sarah:f Thomas:m Laura:f Daniel:m'
    + ' Julia:f Martin:m Clara:f Paul:m Nina:f Oliver:m Helen:f George:m',
    'de': 'Anna:f Peter:m Lukas:m Sophie:f Jonas:m Lena:f Felix:m Marie:f Tobias:m Hanna:f'
    + ' Stefan:m Katrin:f Jan:m Greta:f Moritz:m Ute:f Bernd:m Frieda:f',
    'es': 'Ana:f Pedro:m Lucía:f Javier:m Carmen:f Diego:m Elena:f Pablo:m Marta:f Andrés:m'
    + ' Sofía:f Miguel:m Isabel:f Raúl:m Teresa:f Jorge:m Rosa:f Manuel:m',
}
CITIES = {
    'en': 'London Dublin Boston Chicago Edinburgh Toronto Sydney Denver Leeds Bristol',
    'de': 'Berlin Hamburg München Köln Wien Zürich Dresden Bremen Leipzig Stuttgart',
    'es': 'Madrid Sevilla Valencia Bilbao Toledo Granada Lima Bogotá Málaga Córdoba',
}
# Vehicles and events: en | de gender:noun | es gender:noun.
VEHICLES = """
train|m:Zug|m:tren
bus|m:Bus|m:autobús
ship|n:Schiff|m:barco
plane|n:Flugzeug|m:avión
ferry|f:Fähre|m:transbordador
"""
EVENTS = """
concert|n:Konzert|m:concierto
party|f:Feier|f:fiesta
exam|f:Prüfung|m:examen
meeting|n:Treffen|f:reunión
wedding|f:Hochzeit|f:boda
festival|n:Fest|m:festival
"""
WEATHER = """
it rains|es regnet|llueve
it snows|es schneit|nieva
the sun shines|die Sonne scheint|hace sol
it is cold|es kalt ist|hace frío
it is windy|es windig ist|hace viento
"""
MONTHS = {
    'en': 'January February March April May June July August September October November December',
    'de': 'Januar Februar März April Mai Juni Juli August September Oktober November Dezember',
    'es': 'enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre',
}

# Templates: {LABEL=slot:options} fills a slot (see Filler). Plain sentences first, then ones with digits.
# Slots: subj (a name or a person, an animal with :vi when the verb allows), name, np (a noun phrase:
# nom/acc/dat case, def/indef/poss=LABEL/num/barepl/bare determiner, adj or adj? for an adjective, c=
# categories, obj or obj=vt2 for the verb's object categories, pa for Spanish's personal "a"), padj
# (a predicate adjective agreeing with LABEL; in Spanish with its copula), vt/vt2/vi/vd (verbs by form),
# aux (German perfect auxiliary of vi), pron (he/she), rel (German relative pronoun), agr (Spanish
# gender agreement m/f), place, dest, time:past|hab|fut, city, vehicle, event, weather and the digits:
# int:LO-HI, year, clock, date, daymonth, price, pct, dec, ord (ord:m/f in Spanish).
TEMPLATES = {
    'en': {
        'plain': [
            '{S=subj} {vt:3sg} {np:obj:def:adj?} {place}.',
            '{time:hab} {S=subj} {vt:3sg} {np:obj:indef:adj?}.',
            '{time:past} {S=subj} {vt:past} {np:obj:def} {place}.',
            '{S=subj} wants to {vt:inf} {np:obj:def:adj?} {time:fut}.',
            '{S=name} has to {vt:inf} {np:obj:poss=S} {time:fut}.',
            '{time:hab} {S=subj} is {padj:S}.',
            '{S=np:nom:def} is {padj:S} and {padj:S}.',
            '{S=subj:vi} {vi:3sg} {place} {time:hab}.',
            '{time:fut} {S=name} goes {dest} with {np:dat:poss=S:c=PA}.',
            '{time:past} {S=subj:vi} {vi:past} {place}.',
            '{S=name} {vd:3sg} {np:dat:def:c=P} {np:acc:indef:c=TF:adj?}.',
            '{time:past} {S=name} {vd:past} {np:dat:poss=S:c=P} {np:acc:def:c=T}.',
            'Does {S=subj} {vt:inf} {np:obj:def} {place}?',
            'Where is {X=np:nom:def:obj:c=TAFB} that {S=name} {vt:past} {time:past}?',
            '{S=name} {vi:3sg} {place} because {pron:S} is {padj:S}.',
            'When {weather}, {S=subj:vi} {vi:3sg} {place}.',
            '{S=subj} {vt:3sg} {np:obj:def} and {S2=subj} {vt2:3sg} {np:obj=vt2:def}.',
            'There is {np:indef:adj:c=TAF} {place}.',
            '{S=name} likes {np:def:adj?:c=TAF} very much.',
            "{O=name}'s {X=np:bare:c=TA} is {padj:X} {time:hab}.",
            'Please bring {np:acc:def:c=TF} {dest}.',
            '{S=name} knows that {X=np:nom:def:c=TA} is {place}.',
            '{time:fut} {S=subj} will {vt:inf} {np:obj:indef:adj?} {place}.',
            '{S=subj} does not {vt:inf} {np:obj:def} today.',
            'While {S=name} {vi:3sg}, {S2=subj} {vt:3sg} {np:obj:def}.',
            '{S=name} buys {np:indef:c=F}, {np:indef:c=F} and {np:indef:c=T}.',
            '{S=subj:vi} can {vi:inf} {place}.',
            '{S=subj} {vt:past} {np:obj:indef:adj} {time:past}.',
            'Where does {S=subj:vi} {vi:inf} {time:hab}?',
            '{S=subj} {vt:3sg} {np:obj:def} with {np:dat:indef:c=P}.',
            'Who {vt:past} {np:obj:def:adj?} {place}?',
            '{S=name} says that {X=np:nom:def} is {padj:X}.',
        ],
        'digits': [
            '{S=subj} {vt:3sg} {np:num:obj:adj?} {place}.',
            '{time:past} {S=subj} {vt:past} {np:num:obj}.',
            'There are {np:num:adj?:c=TAF} {place}.',
            '{X=np:nom:def:adj?:c=TF} costs {price} {place}.',
            '{S=name} paid {price} for {np:acc:def:c=TF}.',
            '{S=subj:vi} {vi:3sg} every day at {clock}.',
            'The {vehicle} to {city} leaves at {clock}.',
            '{X=np:nom:def:c=B} was built in {year}.',
            '{S=name} was born in {city} in {year}.',
            'The {event} in {city} is on {date}.',
            '{S=name} visits {np:acc:poss=S:c=P} on {daymonth}.',
            '{S=name} finished the race in {ord} place.',
            '{S=name} lives on the {ord} floor in {city}.',
            '{S=subj:c=P} is {int:18-95} years old and lives in {city}.',
            '{city} has about {bigint} inhabitants.',
            '{S=name} walked {dec} kilometres {time:past}.',
            'The price of {np:barepl:c=TF} rose by {pct} {time:past}.',
            'Room {int:100-499} of the hotel is on the {ord} floor.',
            'The {vehicle} from {city} arrived on {date}.',
        ],
    },
    'de': {
        'plain': [
            '{S=subj} {vt:3sg} {np:obj:acc:def:adj?} {place}.',
            '{time:hab} {vt:3sg} {S=subj} {np:obj:acc:indef:adj?}.',
            '{time:past} hat {S=subj} {np:obj:acc:def} {place} {vt:past}.',
            '{S=subj} will {time:fut} {np:obj:acc:def:adj?} {vt:inf}.',
            '{S=name} muss {time:fut} {np:obj:acc:poss=S} {vt:inf}.',
            '{time:hab} ist {S=subj} {padj:S}.',
            '{S=np:nom:def} ist {padj:S} und {padj:S}.',
            '{S=subj:vi} {vi:3sg} {time:hab} {place}.',
            '{time:fut} geht {S=name} mit {np:dat:poss=S:c=PA} {dest}.',
            '{time:past} {aux} {S=subj:vi} {place} {vi:past}.',
            '{S=name} {vd:3sg} {np:dat:def:c=P} {np:acc:indef:c=TF:adj?}.',
            '{time:past} hat {S=name} {np:dat:poss=S:c=P} {np:acc:def:c=T} {vd:past}.',
            '{vt:3sg} {S=subj} {np:obj:acc:def} {place}?',
            'Wo ist {X=np:nom:def:obj:c=TAFB}, {rel:X} {S=name} {time:past} {vt:past} hat?',
            '{S=name} {vi:3sg} {place}, weil {pron:S} {padj:S} ist.',
            'Wenn {weather}, {vi:3sg} {S=subj:vi} {place}.',
            '{S=subj} {vt:3sg} {np:obj:acc:def}, und {S2=subj} {vt2:3sg} {np:obj=vt2:acc:def}.',
            '{place} gibt es {np:acc:indef:adj:c=TAF}.',
            '{S=name} mag {np:acc:def:adj?:c=TAF} sehr.',
            '{O=name:gen} {X=np:bare:nom:c=TA} ist {time:hab} {padj:X}.',
            'Bitte bring {np:acc:def:c=TF} {dest}.',
            '{S=name} weiß, dass {X=np:nom:def:c=TA} {place} ist.',
            '{time:fut} wird {S=subj} {np:obj:acc:indef:adj?} {place} {vt:inf}.',
            '{S=subj} {vt:3sg} {np:obj:acc:def} heute nicht.',
            'Während {S=name} {vi:3sg}, {vt:3sg} {S2=subj} {np:obj:acc:def}.',
            '{S=name} kauft {np:acc:indef:c=F}, {np:acc:indef:c=F} und {np:acc:indef:c=T}.',
            '{S=subj:vi} kann {place} {vi:inf}.',
            '{S=subj} hat {time:past} {np:obj:acc:indef:adj} {vt:past}.',
            'Wo {vi:3sg} {S=subj:vi} {time:hab}?',
            '{S=subj} {vt:3sg} {np:obj:acc:def} mit {np:dat:indef:c=P}.',
            'Wer hat {np:obj:acc:def:adj?} {place} {vt:past}?',
            '{S=name} sagt, dass {X=np:nom:def} {padj:X} ist.',
        ],
        'digits': [
            '{S=subj} {vt:3sg} {np:num:obj:acc:adj?} {place}.',
            '{time:past} hat {S=subj} {np:num:obj:acc} {vt:past}.',
            '{place} gibt es {np:num:acc:adj?:c=TAF}.',
            '{X=np:nom:def:adj?:c=TF} kostet {place} {price}.',
            '{S=name} hat {price} für {np:acc:def:c=TF} bezahlt.',
            '{S=subj:vi} {vi:3sg} jeden Tag um {clock} Uhr.',
            '{V=vehicle:nom:def} nach {city} fährt um {clock} Uhr ab.',
            '{X=np:nom:def:c=B} wurde {year} gebaut.',
            '{S=name} wurde {year} in {city} geboren.',
            '{E=event:nom:def} in {city} ist am {date}.',
            '{S=name} besucht am {daymonth} {np:acc:poss=S:c=P}.',
            '{S=name} hat beim Rennen den {ord} Platz belegt.',
            '{S=name} wohnt im {ord} Stock in {city}.',
            '{S=subj:c=P} ist {int:18-95} Jahre alt und wohnt in {city}.',
            '{city} hat etwa {bigint} Einwohner.',
            '{S=name} ist {time:past} {dec} Kilometer gelaufen.',
            'Der Preis für {np:barepl:acc:c=TF} ist {time:past} um {pct} gestiegen.',
            'Zimmer {int:100-499} im Hotel liegt im {ord} Stock.',
            '{V=vehicle:nom:def} aus {city} ist am {date} angekommen.',
        ],
    },
    'es': {
        'plain': [
            '{S=subj} {vt:3sg} {np:obj:pa:def:adj?} {place}.',
            '{time:hab} {S=subj} {vt:3sg} {np:obj:pa:indef:adj?}.',
            '{time:past} {S=subj} {vt:past} {np:obj:pa:def} {place}.',
            '{S=subj} quiere {vt:inf} {np:obj:pa:def:adj?} {time:fut}.',
            '{S=name} tiene que {vt:inf} {np:obj:pa:poss=S} {time:fut}.',
            '{time:hab} {S=subj} {padj:S}.',
            '{S=np:def} {padj:S} y {padj:S}.',
            '{S=subj:vi} {vi:3sg} {place} {time:hab}.',
            '{time:fut} {S=name} va {dest} con {np:poss=S:c=PA}.',
            '{time:past} {S=subj:vi} {vi:past} {place}.',
            '{S=name} le {vd:3sg} {np:indef:c=TF:adj?} a {np:def:c=P}.',
            '{time:past} {S=name} le {vd:past} {np:def:c=T} a {np:poss=S:c=P}.',
            '¿{vt:3sg} {S=subj} {np:obj:pa:def} {place}?',
            '¿Dónde está {X=np:def:obj:c=TAFB} que {S=name} {vt:past} {time:past}?',
            '{S=name} {vi:3sg} {place} porque {padj:S}.',
            'Cuando {weather}, {S=subj:vi} {vi:3sg} {place}.',
            '{S=subj} {vt:3sg} {np:obj:pa:def} y {S2=subj} {vt2:3sg} {np:obj=vt2:pa:def}.',
            '{place} hay {np:indef:adj:c=TAF}.',
            'A {S=name} le gusta mucho {np:def:adj?:c=TAF}.',
            '{X=np:def:c=TA} de {O=name} {padj:X} {time:hab}.',
            'Por favor, lleva {np:def:c=TF} {dest}.',
            '{S=name} sabe que {X=np:def:c=TA} está {place}.',
            '{time:fut} {S=subj} va a {vt:inf} {np:obj:pa:indef:adj?} {place}.',
            '{S=subj} no {vt:3sg} {np:obj:pa:def} hoy.',
            'Mientras {S=name} {vi:3sg}, {S2=subj} {vt:3sg} {np:obj:pa:def}.',
            '{S=name} compra {np:indef:c=F}, {np:indef:c=F} y {np:indef:c=T}.',
            '{S=subj:vi} puede {vi:inf} {place}.',
            '{S=subj} {vt:past} {np:obj:pa:indef:adj} {time:past}.',
            '¿Dónde {vi:3sg} {S=subj:vi} {time:hab}?',
            '{S=subj} {vt:3sg} {np:obj:pa:def} con {np:indef:c=P}.',
            '¿Quién {vt:past} {np:obj:pa:def:adj?} {place}?',
            '{S=name} dice que {X=np:def} {padj:X}.',
        ],
        'digits': [
            '{S=subj} {vt:3sg} {np:num:obj:pa:adj?} {place}.',
            '{time:past} {S=subj} {vt:past} {np:num:obj:pa}.',
            '{place} hay {np:num:adj?:c=TAF}.',
            '{X=np:def:adj?:c=TF} cuesta {price} {place}.',
            '{S=name} pagó {price} por {np:def:c=TF}.',
            '{S=subj:vi} {vi:3sg} todos los días a las {clock}.',
            'El {vehicle} a {city} sale a las {clock}.',
            '{X=np:def:c=B} fue {agr:X:construido:construida} en {year}.',
            '{S=name} nació en {city} en {year}.',
            '{E=event:def} en {city} es el {date}.',
            '{S=name} visita a {np:poss=S:c=P} el {daymonth}.',
            '{S=name} quedó en {ord:m} lugar en la carrera.',
            '{S=name} vive en el {ord:m} piso en {city}.',
            '{S=subj:c=P} tiene {int:18-95} años y vive en {city}.',
            '{city} tiene unos {bigint} habitantes.',
            '{S=name} caminó {dec} kilómetros {time:past}.',
            'El precio de {np:barepl:c=TF} subió un {pct} {time:past}.',
            'La habitación {int:100-499} del hotel está en la {ord:f} planta.',
            'El {vehicle} de {city} llegó el {date}.',
        ],
    },
}

DE_ARTICLES = {  # (determiner, case) -> gender -> article; indef/poss endings go on ein/sein/ihr
    ('def', 'nom'): {'m': 'der', 'f': 'die', 'n': 'das', 'pl': 'die'},
    ('def', 'acc'): {'m': 'den', 'f': 'die', 'n': 'das', 'pl': 'die'},
    ('def', 'dat'): {'m': 'dem', 'f': 'der', 'n': 'dem', 'pl': 'den'},
    ('indef', 'nom'): {'m': '', 'f': 'e', 'n': '', 'pl': 'e'},
    ('indef', 'acc'): {'m': 'en', 'f': 'e', 'n': '', 'pl': 'e'},
    ('indef', 'dat'): {'m': 'em', 'f': 'er', 'n': 'em', 'pl': 'en'},
}
DE_WEAK = {'nom': {'m': 'e', 'f': 'e', 'n': 'e'}, 'acc': {'m': 'en', 'f': 'e', 'n': 'e'},
           'dat': {'m': 'en', 'f': 'en', 'n': 'en'}}
DE_MIXED = {'nom': {'m': 'er', 'f': 'e', 'n': 'es'}, 'acc': {'m': 'en', 'f': 'e', 'n': 'es'},
            'dat': {'m': 'en', 'f': 'en', 'n': 'en'}}
DE_CONTRACTIONS = [('in dem ', 'im '), ('zu dem ', 'zum '), ('zu der ', 'zur '), ('an dem ', 'am '),
                   ('von dem ', 'vom '), ('bei dem ', 'beim '), ('in das ', 'ins ')]


def parse_table(text):
    return [line.split('|') for line in text.strip().splitlines()]


class Lexicon:
    """The word lists, parsed once: each entry keeps its forms in all three languages."""

    def __init__(self):
        self.nouns = []
        for cat, en, de, es in parse_table(NOUNS):
            dg, dw = de.split(':')
            eg, ew = es.split(':')
            self.nouns.append({'cat': cat, 'en': en.split(','), 'de': (dg, *dw.split(',')),
                               'es': (eg, *ew.split(','))})
        self.transitive = [{'cats': c, 'en': en.split(','), 'de': de.split(','), 'es': es.split(',')}
                           for c, en, de, es in parse_table(TRANSITIVE)]
        self.intransitive = [{'cats': c, 'en': en.split(','), 'de': de.split(','), 'es': es.split(',')}
                             for c, en, de, es in parse_table(INTRANSITIVE)]
        self.ditransitive = [{'en': en.split(','), 'de': de.split(','), 'es': es.split(',')}
                             for en, de, es in parse_table(DITRANSITIVE)]
        self.adjectives = []
        for cats, en, de, es in parse_table(ADJECTIVES):
            base, _, stem = de.partition('/')
            m, f, cop = es.split(',')
            self.adjectives.append({'cats': cats, 'en': en, 'de': (base, stem or base), 'es': (m, f, cop)})
        self.places = [{'en': en.split(';'), 'de': de.split(';'), 'es': es.split(';')}
                       for en, de, es in parse_table(PLACES)]
        self.times = [{'kind': k, 'en': en, 'de': de, 'es': es} for k, en, de, es in parse_table(TIMES)]
        self.vehicles = [{'en': en, 'de': de.split(':'), 'es': es.split(':')} for en, de, es in parse_table(VEHICLES)]
        self.events = [{'en': en, 'de': de.split(':'), 'es': es.split(':')} for en, de, es in parse_table(EVENTS)]
        self.weather = [{'en': en, 'de': de, 'es': es} for en, de, es in parse_table(WEATHER)]
        self.names = {lang: [tuple(n.split(':')) for n in NAMES[lang].split()] for lang in LANGUAGES}
        self.cities = {lang: CITIES[lang].split() for lang in LANGUAGES}
        self.months = {lang: MONTHS[lang].split() for lang in LANGUAGES}

    def content_words(self, lang):
        """How many content words (nouns, verbs, adjectives, places, times, names, ...) a language has."""
        return (len(self.nouns) + len(self.transitive) + len(self.intransitive) + len(self.ditransitive)
                + len(self.adjectives) + len(self.places) + len(self.times) + len(self.names[lang])
                + len(self.cities[lang]) + len(self.vehicles) + len(self.events))


def es_plural_adjective(a):
    special = {'marrón': 'marrones', 'joven': 'jóvenes', 'feliz': 'felices'}
    if a in special:
        return special[a]
    return a + ('s' if a[-1] in 'aeiouáéó' else 'es')


def en_ordinal(n):
    suffix = 'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')
    return f'{n}{suffix}'


def group(n, sep):
    return f'{n:,}'.replace(',', sep)


class Filler:
    """Fills one template in one language; slots may refer to what earlier slots chose (labels)."""

    SLOT = re.compile(r'\{([^}]+)\}')

    def __init__(self, lang, lex, rng):
        self.lang, self.lex, self.rng = lang, lex, rng

    def fill(self, template):
        r = self.rng
        self.labels = {}
        self.used_nouns = set()
        self.used_adjs = set()
        vt, vt2 = r.sample(self.lex.transitive, 2)
        self.verbs = {'vt': vt, 'vt2': vt2, 'vi': r.choice(self.lex.intransitive),
                      'vd': r.choice(self.lex.ditransitive)}
        # Slots are filled left to right, except that a subject's slot (which a later predicate may
        # agree with) must come first: German and Spanish front verbs before their subjects, so the
        # labelled slots are filled first, then the rest, and all are put back in place.
        specs = self.SLOT.findall(template)
        order = sorted(range(len(specs)), key=lambda i: 0 if '=' in specs[i].split(':')[0] else 1)
        values = [None] * len(specs)
        for i in order:
            values[i] = self.slot(specs[i])
        parts = iter(values)
        text = self.SLOT.sub(lambda m: next(parts), template)
        return self.finish(text)

    def finish(self, text):
        text = re.sub(r'\s+', ' ', text).strip()
        text = re.sub(r' ([,.?])', r'\1', text)
        if self.lang == 'en':
            text = re.sub(r'\b([Aa]) (?=[aeiouAEIOU])', r'\1n ', text)
        elif self.lang == 'de':
            for a, b in DE_CONTRACTIONS:
                text = re.sub(r'\b' + a, b, text)
        else:
            text = re.sub(r'\ba el\b', 'al', text)
            text = re.sub(r'\bde el\b', 'del', text)
        i = 1 if text.startswith('¿') else 0
        return text[:i] + text[i].upper() + text[i + 1:]

    def slot(self, spec):
        label, spec = spec.split('=', 1) if '=' in spec.split(':')[0] else ('', spec)
        kind, *opts = spec.split(':')
        value = getattr(self, 's_' + kind)(opts)
        if label:
            self.labels[label] = self.last
        return value

    # Who and what -------------------------------------------------------------------------------
    def s_name(self, opts):
        names = self.lex.names[self.lang]
        if 'gen' in opts:  # German genitive "Annas": not after a sibilant
            names = [n for n in names if n[0][-1] not in 'sxz']
        name, gender = self.rng.choice(names)
        self.last = {'gender': gender, 'cat': 'P', 'name': name}
        return name + 's' if 'gen' in opts else name

    def s_subj(self, opts):
        cats = 'P'
        if 'vi' in opts:
            cats = self.verbs['vi']['cats']
        for o in opts:
            if o.startswith('c='):
                cats = o[2:]
        if 'A' in cats and ('P' not in cats or self.rng.random() < 0.3):
            return self.s_np(['nom', 'def' if self.rng.random() < 0.7 else 'indef', 'adj?', 'c=A'])
        if self.rng.random() < 0.5:
            return self.s_name([])
        return self.s_np(['nom', 'def' if self.rng.random() < 0.7 else 'indef', 'adj?', 'c=P'])

    def pick_noun(self, cats):
        choices = [n for n in self.lex.nouns if n['cat'] in cats and id(n) not in self.used_nouns]
        noun = self.rng.choice(choices)
        self.used_nouns.add(id(noun))
        return noun

    def pick_adj(self, cat):
        choices = [a for a in self.lex.adjectives if cat in a['cats'] and id(a) not in self.used_adjs]
        adj = self.rng.choice(choices)
        self.used_adjs.add(id(adj))
        return adj

    def s_np(self, opts):
        r = self.rng
        case = next((o for o in opts if o in ('nom', 'acc', 'dat')), 'nom')
        det = next((o for o in opts if o in ('def', 'indef', 'num', 'barepl', 'bare') or o.startswith('poss=')), 'def')
        cats = 'TFAPB'
        for o in opts:  # c= and obj together: the verb's objects of those categories
            if o.startswith('c='):
                cats = ''.join(c for c in cats if c in o[2:])
            elif o == 'obj' or o.startswith('obj='):
                cats = ''.join(c for c in cats if c in self.verbs[o[4:] or 'vt']['cats'])
        noun = self.pick_noun(cats)
        adj = self.pick_adj(noun['cat']) if 'adj' in opts or ('adj?' in opts and r.random() < 0.4) else None
        plural = det in ('num', 'barepl')
        number = None
        if det == 'num':
            number = r.choice([n for n in range(2, 100) if n % 10 != 1])
        gender = noun[self.lang][0] if self.lang != 'en' else None
        self.last = {'gender': 'pl' if plural else gender, 'cat': noun['cat'], 'noun': noun}
        text = getattr(self, 'np_' + self.lang)(noun, adj, det, case, plural, number)
        if 'pa' in opts and noun['cat'] in 'PA':
            text = 'a ' + text
        return text

    def np_en(self, noun, adj, det, case, plural, number):
        word = noun['en'][1 if plural else 0]
        words = ([adj['en']] if adj else []) + [word]
        if det == 'def':
            return ' '.join(['the'] + words)
        if det == 'indef':
            return ' '.join(['a'] + words)
        if det == 'num':
            return ' '.join([str(number)] + words)
        if det.startswith('poss='):
            owner = self.labels[det[5:]]
            return ' '.join(['her' if owner['gender'] == 'f' else 'his'] + words)
        return ' '.join(words)  # bare, barepl

    def np_de(self, noun, adj, det, case, plural, number):
        gender, sg, pl = noun['de']
        word = pl if plural else sg
        if plural:  # a number or nothing before it: strong endings (nominative and accusative only)
            lead = [str(number)] if number else []
            return ' '.join(lead + ([adj['de'][1] + 'e'] if adj else []) + [word])
        if det == 'def':
            article = DE_ARTICLES[('def', case)][gender]
            return ' '.join([article] + ([adj['de'][1] + DE_WEAK[case][gender]] if adj else []) + [word])
        if det == 'bare':
            return ' '.join(([adj['de'][1] + DE_MIXED[case][gender]] if adj else []) + [word])
        if det == 'indef':
            stem = 'ein'
        else:
            stem = 'ihr' if self.labels[det[5:]]['gender'] == 'f' else 'sein'
        article = stem + DE_ARTICLES[('indef', case)][gender]
        return ' '.join([article] + ([adj['de'][1] + DE_MIXED[case][gender]] if adj else []) + [word])

    def np_es(self, noun, adj, det, case, plural, number):
        gender, sg, pl = noun['es']
        word = pl if plural else sg
        a = None
        if adj:
            a = adj['es'][0 if gender == 'm' else 1]
            if plural:
                a = es_plural_adjective(a)
        tail = [word] + ([a] if a else [])
        if det == 'num':
            return ' '.join([str(number)] + tail)
        if det == 'barepl':
            return ' '.join([{'m': 'los', 'f': 'las'}[gender]] + tail)
        if det == 'def':
            return ' '.join([{'m': 'el', 'f': 'la'}[gender]] + tail)
        if det == 'indef':
            return ' '.join([{'m': 'un', 'f': 'una'}[gender]] + tail)
        if det.startswith('poss='):
            return ' '.join(['su'] + tail)
        return ' '.join(tail)

    def s_padj(self, opts):
        owner = self.labels[opts[0]]
        adj = self.pick_adj(owner['cat'])
        self.last = None
        if self.lang == 'en':
            return adj['en']
        if self.lang == 'de':
            return adj['de'][0]
        m, f, cop = adj['es']
        gender = owner['gender']
        form = f if gender == 'f' else m
        if gender == 'pl':
            form = es_plural_adjective(form)
        return f"{'es' if cop == 'ser' else 'está'} {form}"

    def s_pron(self, opts):
        g = self.labels[opts[0]]['gender']
        self.last = None
        return {'en': {'f': 'she', 'm': 'he'}, 'de': {'f': 'sie', 'm': 'er'}}[self.lang][g]

    def s_rel(self, opts):  # German relative pronoun, accusative
        self.last = None
        return DE_ARTICLES[('def', 'acc')][self.labels[opts[0]]['gender']]

    def s_agr(self, opts):  # Spanish agreement: LABEL:masculine:feminine
        self.last = None
        return opts[2] if self.labels[opts[0]]['gender'] == 'f' else opts[1]

    # Verbs ----------------------------------------------------------------------------------------
    def verb(self, name, opts):
        forms = self.verbs[name][self.lang]
        self.last = None
        form = {'3sg': 0, 'inf': 1, 'past': 2}[opts[0]]
        return forms[form]

    def s_vt(self, opts):
        return self.verb('vt', opts)

    def s_vt2(self, opts):
        return self.verb('vt2', opts)

    def s_vi(self, opts):
        return self.verb('vi', opts)

    def s_vd(self, opts):
        return self.verb('vd', opts)

    def s_aux(self, opts):
        self.last = None
        return 'ist' if self.verbs['vi']['de'][3] == 's' else 'hat'

    # Where and when -------------------------------------------------------------------------------
    def s_place(self, opts):
        self.last = None
        return self.rng.choice(self.lex.places)[self.lang][0]

    def s_dest(self, opts):
        self.last = None
        return self.rng.choice(self.lex.places)[self.lang][1]

    def s_time(self, opts):
        self.last = None
        return self.rng.choice([t for t in self.lex.times if t['kind'] == opts[0]])[self.lang]

    def s_city(self, opts):
        self.last = None
        return self.rng.choice(self.lex.cities[self.lang])

    def s_weather(self, opts):
        self.last = None
        return self.rng.choice(self.lex.weather)[self.lang]

    def gendered(self, entry, opts):
        if self.lang == 'en':
            self.last = None
            return entry['en']
        gender, word = entry[self.lang]
        self.last = {'gender': gender, 'cat': 'T'}
        if self.lang == 'es':
            return f"{'el' if gender == 'm' else 'la'} {word}" if 'def' in opts else word
        return f"{DE_ARTICLES[('def', 'nom')][gender]} {word}" if 'def' in opts else word

    def s_vehicle(self, opts):
        return self.gendered(self.rng.choice(self.lex.vehicles), opts)

    def s_event(self, opts):
        return self.gendered(self.rng.choice(self.lex.events), opts)

    # Digits ---------------------------------------------------------------------------------------
    def s_int(self, opts):
        self.last = None
        lo, hi = map(int, opts[0].split('-'))
        return str(self.rng.randint(lo, hi))

    def s_bigint(self, opts):
        self.last = None
        n = self.rng.choice([self.rng.randint(12, 990) * 1000, self.rng.randint(2, 95) * 100])
        return group(n, ',' if self.lang == 'en' else '.')

    def s_year(self, opts):
        self.last = None
        return str(self.rng.choice([self.rng.randint(1150, 1999), self.rng.randint(1900, 2024)]))

    def s_clock(self, opts):
        self.last = None
        return f'{self.rng.randint(2, 23)}:{self.rng.choice([0, 5, 10, 15, 20, 25, 30, 40, 45, 50]):02d}'

    def s_date(self, opts):
        self.last = None
        y, m, d = self.rng.randint(1990, 2030), self.rng.randint(1, 12), self.rng.randint(2, 28)
        return {'en': f'{y}-{m:02d}-{d:02d}', 'de': f'{d}.{m}.{y}', 'es': f'{d}/{m}/{y}'}[self.lang]

    def s_daymonth(self, opts):
        self.last = None
        m, d = self.rng.choice(self.lex.months[self.lang]), self.rng.randint(2, 28)
        return {'en': f'{m} {en_ordinal(d)}', 'de': f'{d}. {m}', 'es': f'{d} de {m}'}[self.lang]

    def s_price(self, opts):
        self.last = None
        euros = self.rng.randint(2, 199)
        cents = self.rng.choice([0, 0, 0, 50, 20, 99, 75, 10])
        if self.lang == 'en':
            return f'€{euros}' if cents == 0 else f'€{euros}.{cents:02d}'
        return f'{euros} €' if cents == 0 else f'{euros},{cents:02d} €'

    def s_pct(self, opts):
        self.last = None
        n = self.rng.randint(2, 60)
        return f'{n}%' if self.lang == 'en' else f'{n} %'

    def s_dec(self, opts):
        self.last = None
        whole, tenth = self.rng.randint(1, 30), self.rng.randint(1, 9)
        return f'{whole}{"." if self.lang == "en" else ","}{tenth}'

    def s_ord(self, opts):
        self.last = None
        n = self.rng.randint(2, 12)
        if self.lang == 'en':
            return en_ordinal(n)
        if self.lang == 'de':
            return f'{n}.'
        if opts and opts[0] == 'f':
            return f'{n}.ª'
        return f'{n}.er' if n == 3 else f'{n}.º'


def generate(lang, lex, count, seed, exclude=frozenset()):
    """count distinct sentences of 5-15 words, none in exclude; 30% of them with digits (the 3rd, 6th and
    9th of every ten), each from a template drawn at random from its kind."""
    rng = random.Random(f'{seed}-{lang}-{len(exclude)}')
    filler = Filler(lang, lex, rng)
    templates = TEMPLATES[lang]
    out, seen = [], set(exclude)
    while len(out) < count:
        kind = 'digits' if len(out) % 10 in (2, 5, 8) else 'plain'
        try:
            sentence = filler.fill(rng.choice(templates[kind]))
        except IndexError:  # nothing fits (a verb with no object of the template's categories): draw again
            continue
        words = len(sentence.split())
        if 5 <= words <= 15 and sentence not in seen:
            seen.add(sentence)
            out.append(sentence)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('out_dir')
    ap.add_argument('--train', type=int, default=700)
    ap.add_argument('--heldout', type=int, default=40)
    ap.add_argument('--seed', type=int, default=1)
    args = ap.parse_args()
    lex = Lexicon()
    os.makedirs(args.out_dir, exist_ok=True)
    for lang in LANGUAGES:
        train = generate(lang, lex, args.train, args.seed)
        heldout = generate(lang, lex, args.heldout, args.seed, frozenset(train))
        for name, rows, start in (('train', train, 1), ('heldout', heldout, args.train + 1)):
            with open(os.path.join(args.out_dir, f'{lang}-{name}.tsv'), 'w', encoding='utf-8') as f:
                for i, sentence in enumerate(rows, start):
                    f.write(f'{lang}-{i:04d}\t{sentence}\n')
        digits = sum(any(c.isdigit() for c in s) for s in train + heldout)
        words = sum(len(s.split()) for s in train + heldout) / len(train + heldout)
        print(f'{lang}: {len(train)} training and {len(heldout)} held-out sentences, {words:.1f} words on average, '
              f'{digits / len(train + heldout):.0%} with digits; {len(TEMPLATES[lang]["plain"])} + '
              f'{len(TEMPLATES[lang]["digits"])} templates, {lex.content_words(lang)} content words')


if __name__ == '__main__':
    main()
